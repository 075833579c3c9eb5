#!/usr/bin/env bash
# Installs the OpenGL runtime the probe and the GL cross-check need (Mesa's EGL + llvmpipe)
# when it is missing. Debian/Ubuntu only; elsewhere it says what to install.
set -eu
if ldconfig -p 2>/dev/null | grep -q 'libEGL_mesa.so' && ldconfig -p | grep -q 'libGL.so.1'; then
  exit 0
fi
pkgs="libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libgles2"
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Mesa EGL/GL runtime: $pkgs"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs
else
  echo "warning: no apt-get; install Mesa's EGL and GL runtime (e.g. $pkgs) for the GPU probe" >&2
fi
