// What three.js draws from a glTF file: three's GLTFLoader (npm package three) with its own
// DRACOLoader (the glTF build of the Draco decoder it ships in examples/jsm/libs/draco/gltf/)
// and meshopt decoder, run under node.  DRACOLoader decodes in a Web Worker built from a blob
// URL; here that worker is a node worker thread running the same source, and the decoder files
// are read from disk, so the decoding path (DracoDecoderModule, GetAttributeDataArrayForAllPoints
// with the accessor's array type) is three's own.  Images are not loaded (no DOM); geometry only.
// Usage: NODE_PATH=.npm-tools/node_modules node tests/three_geometry.js FILE...
// Prints one JSON line per file: {"file", "primitives": [{"mesh", "primitive", "mode", "index",
// "attributes", "drawn"}]}: "attributes" (by glTF semantic) as the loader decoded them, "drawn"
// those that three changes before drawing (a SkinnedMesh rescales its skin weights to sum to 1),
// as drawn; "mode" 4 for a mesh (three draws strips and fans as triangle lists).  "index" is
// null or {"type", "data"}; every attribute is {"type", "itemSize", "normalized", "data"}:
// "type" the typed array's name, "data" its little-endian bytes in base64.
// Exit 2 when the file cannot be read.
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');
const { Worker: NodeWorker } = require('worker_threads');
const { resolveObjectURL } = require('buffer');

const THREE_DIR = path.resolve(path.dirname(require.resolve('three')), '..');  // require.resolve gives build/three.cjs
const DRACO_DIR = path.join(THREE_DIR, 'examples', 'jsm', 'libs', 'draco', 'gltf');
// three's ATTRIBUTES table of GLTFLoader, the other way round
const SEMANTICS = { position: 'POSITION', normal: 'NORMAL', tangent: 'TANGENT', uv: 'TEXCOORD_0', uv1: 'TEXCOORD_1',
                    uv2: 'TEXCOORD_2', uv3: 'TEXCOORD_3', color: 'COLOR_0', skinWeight: 'WEIGHTS_0',
                    skinIndex: 'JOINTS_0' };

// A Web Worker over a node worker thread: `self`, `onmessage` and `postMessage` as a browser has them.
const PRELUDE = `const { parentPort } = require('worker_threads');
globalThis.self = globalThis;
globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);
parentPort.on('message', (data) => globalThis.onmessage({ data }));
`;

class BlobWorker {
  constructor(url) {
    this.thread = resolveObjectURL(url).text().then((source) => {
      const thread = new NodeWorker(PRELUDE + source, { eval: true });
      thread.on('message', (data) => this.onmessage({ data }));
      thread.on('error', (e) => { console.error(String(e)); process.exit(2); });
      return thread;
    });
  }

  postMessage(message, transfer) { this.thread.then((t) => t.postMessage(message, transfer)); }

  terminate() { this.thread.then((t) => t.terminate()); }
}
globalThis.Worker = BlobWorker;

function base64(array) {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength).toString('base64');
}

function attribute(a) {
  let array = a.array;
  if (a.isInterleavedBufferAttribute) {  // a padded stride: the components without the padding
    const src = a.data.array;
    array = new src.constructor(a.count * a.itemSize);
    for (let i = 0; i < a.count; i++) {
      for (let c = 0; c < a.itemSize; c++) array[i * a.itemSize + c] = src[i * a.data.stride + a.offset + c];
    }
  }
  return { type: array.constructor.name, itemSize: a.itemSize, normalized: a.normalized, data: base64(array) };
}

async function read(file, modules) {
  const { GLTFLoader, DRACOLoader, MeshoptDecoder } = modules;
  const draco = new DRACOLoader();
  draco._loadLibrary = async (url, responseType) => {  // the decoder files from disk instead of fetch
    const data = fs.readFileSync(path.join(DRACO_DIR, path.basename(url)));
    return responseType === 'text' ? data.toString('utf8')
      : data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
  };
  draco.setDecoderPath(DRACO_DIR + path.sep);
  const decoded = new Map();
  const loader = new GLTFLoader().setDRACOLoader(draco).setMeshoptDecoder(MeshoptDecoder);
  loader.register((parser) => {
    parser.loadTexture = parser.loadTextureImage = async () => null;  // geometry only
    const loadBuffer = parser.loadBuffer.bind(parser);
    parser.loadBuffer = async (index) => {  // a .gltf's buffers from disk or their data URI (no fetch)
      const uri = parser.json.buffers[index].uri;
      if (uri === undefined) return loadBuffer(index);
      const data = uri.startsWith('data:') ? Buffer.from(uri.slice(uri.indexOf(',') + 1), 'base64')
        : fs.readFileSync(path.join(path.dirname(file), decodeURIComponent(uri)));
      return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
    };
    const loadGeometries = parser.loadGeometries.bind(parser);
    parser.loadGeometries = async (primitives) => {  // the geometry as decoded, before any mesh step
      const geometries = await loadGeometries(primitives);
      for (const g of geometries) {
        decoded.set(g, Object.fromEntries(Object.entries(g.attributes).map(([k, a]) => [k, attribute(a)])));
      }
      return geometries;
    };
    return { name: 'node_files' };
  });
  const bytes = fs.readFileSync(file);
  const input = bytes.subarray(0, 4).toString('latin1') === 'glTF'
    ? bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) : bytes.toString('utf8');
  const gltf = await loader.parseAsync(input, '');
  const out = [];
  const meshes = gltf.parser.json.meshes || [];
  for (let mi = 0; mi < meshes.length; mi++) {
    const object = await gltf.parser.getDependency('mesh', mi);
    const parts = object.isGroup ? object.children : [object];
    parts.forEach((part, pi) => {
      const g = part.geometry;
      const attributes = {};
      const drawn = {};
      // a strip or fan three rebuilt as a triangle list is a geometry of its own, as drawn
      const before = decoded.get(g) || Object.fromEntries(Object.entries(g.attributes).map(([k, a]) => [k, attribute(a)]));
      for (const [name, a] of Object.entries(before)) {
        attributes[SEMANTICS[name] || name] = a;
        const now = attribute(g.attributes[name]);
        if (now.data !== a.data) drawn[SEMANTICS[name] || name] = now;
      }
      out.push({ mesh: mi, primitive: pi, mode: part.isMesh ? 4 : meshes[mi].primitives[pi].mode, attributes, drawn,
                 index: g.index ? { type: g.index.array.constructor.name, data: base64(g.index.array) } : null });
    });
  }
  draco.dispose();
  return out;
}

(async () => {
  const jsm = (p) => import(pathToFileURL(path.join(THREE_DIR, 'examples', 'jsm', p)).href);
  const modules = { ...(await jsm('loaders/GLTFLoader.js')), ...(await jsm('loaders/DRACOLoader.js')),
                    ...(await jsm('libs/meshopt_decoder.module.js')) };
  for (const file of process.argv.slice(2)) {
    console.log(JSON.stringify({ file, primitives: await read(file, modules) }));
  }
})().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(2);
});
