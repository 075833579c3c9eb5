#!/usr/bin/env bash
# Installs what the probe and the GL cross-check need when it is missing: Mesa's EGL + OpenGL
# runtime (llvmpipe) and Mesa's Vulkan on the CPU (lavapipe, for `probe --api wgpu`).
# Debian/Ubuntu only; elsewhere it says what to install.
set -eu
pkgs=""
if ! { ldconfig -p 2>/dev/null | grep -q 'libEGL_mesa.so' && ldconfig -p | grep -q 'libGL.so.1'; }; then
  pkgs="libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libgles2"
fi
have_lavapipe() {
  ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' || return 1
  for icd in /usr/share/vulkan/icd.d/lvp_icd.*.json /etc/vulkan/icd.d/lvp_icd.*.json; do
    [ -e "$icd" ] && return 0
  done
  return 1
}
if ! have_lavapipe; then
  pkgs="$pkgs mesa-vulkan-drivers libvulkan1"
fi
[ -n "$pkgs" ] || exit 0
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Mesa's EGL/GL and Vulkan (lavapipe) runtime where missing:$pkgs"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs
else
  echo "warning: no apt-get; install Mesa's EGL/GL runtime and lavapipe (e.g.$pkgs) for the GPU probe" >&2
fi
