// An independent glTF reader for the tests: glTF-Transform (npm @gltf-transform/core and
// @gltf-transform/extensions) with meshoptimizer's and Draco's own decoders (npm meshoptimizer,
// draco3dgltf) reads a file and prints, per triangle primitive, what it draws.
// Usage: NODE_PATH=.npm-tools/node_modules node tests/gltf_triangles.js FILE [--plain OUT]
// (--plain also writes the file decoded, without compression extensions, to OUT: a baseline
// the validator can see into.)
// Prints one JSON object: {"primitives": [{"mesh", "primitive", "mode", "indices", "attributes",
// "targets"}], "animations": [[{"interpolation", "input", "output"}]], "skins": [inverse bind matrices or
// null]} where "indices" is null or {"componentType", "data"} and every attribute is
// {"componentType", "normalized", "size", "data"}; "data" is the array's little-endian bytes in
// base64. Exit 2 when the file cannot be read.
const fs = require('fs');
const { NodeIO } = require('@gltf-transform/core');
const { ALL_EXTENSIONS } = require('@gltf-transform/extensions');
const { MeshoptDecoder } = require('meshoptimizer');
const draco3d = require('draco3dgltf');

function bytes(array) {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength).toString('base64');
}

function accessor(a) {
  return { componentType: a.getComponentType(), normalized: a.getNormalized(), size: a.getElementSize(),
           data: bytes(a.getArray()) };
}

(async () => {
  await MeshoptDecoder.ready;
  const io = new NodeIO().registerExtensions(ALL_EXTENSIONS).registerDependencies({
    'meshopt.decoder': MeshoptDecoder,
    'draco3d.decoder': await draco3d.createDecoderModule(),
  });
  const document = await io.read(process.argv[2]);
  if (process.argv[3] === '--plain') {
    for (const ext of document.getRoot().listExtensionsUsed()) {
      if (/draco_mesh_compression|meshopt_compression/.test(ext.extensionName)) ext.dispose();
    }
    await io.write(process.argv[4], document);
  }
  const out = [];
  document.getRoot().listMeshes().forEach((mesh, mi) => {
    mesh.listPrimitives().forEach((prim, pi) => {
      const attributes = {};
      for (const semantic of prim.listSemantics()) attributes[semantic] = accessor(prim.getAttribute(semantic));
      const targets = prim.listTargets().map((t) => {
        const o = {};
        for (const semantic of t.listSemantics()) o[semantic] = accessor(t.getAttribute(semantic));
        return o;
      });
      const idx = prim.getIndices();
      out.push({ mesh: mi, primitive: pi, mode: prim.getMode(), attributes, targets,
                 indices: idx ? { componentType: idx.getComponentType(), data: bytes(idx.getArray()) } : null });
    });
  });
  const animations = document.getRoot().listAnimations().map((anim) => anim.listSamplers().map((s) => ({
    interpolation: s.getInterpolation(), input: accessor(s.getInput()), output: accessor(s.getOutput()),
  })));
  const skins = document.getRoot().listSkins().map((skin) => {
    const m = skin.getInverseBindMatrices();
    return m ? accessor(m) : null;
  });
  process.stdout.write(JSON.stringify({ primitives: out, animations, skins }));
})().catch((e) => {
  console.error(String(e));
  process.exit(2);
});
