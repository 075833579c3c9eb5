// Validate glTF files with the Khronos glTF validator (npm package gltf-validator).
// Usage: NODE_PATH=.npm-tools/node_modules node tests/gltf_validator.js FILE...
// Prints one JSON line per file: {"file", "counts": {code: n}, "severities": {code: s}}
// (severity 0 error, 1 warning, 2 info, 3 hint); exit 2 when the validator cannot run.
const fs = require('fs');
const path = require('path');
const validator = require('gltf-validator');

async function validate(file) {
  const dir = path.dirname(file);
  const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {
    uri: path.basename(file),
    maxIssues: 0,
    externalResourceFunction: (uri) => new Promise((resolve, reject) => {
      try {
        resolve(new Uint8Array(fs.readFileSync(path.join(dir, decodeURIComponent(uri)))));
      } catch (e) {
        reject(e.toString());
      }
    }),
  });
  const counts = {};
  const severities = {};
  for (const m of report.issues.messages) {
    counts[m.code] = (counts[m.code] || 0) + 1;
    severities[m.code] = m.severity;
  }
  return {file, counts, severities};
}

(async () => {
  for (const file of process.argv.slice(2)) {
    console.log(JSON.stringify(await validate(file)));
  }
})().catch((e) => {
  console.error(String(e));
  process.exit(2);
});
