// glTF-Transform's command line (npm @gltf-transform/cli) run on many files in one node process:
// the program its bin script runs, executed once per file (program.exec, its programmatic entry),
// so its start-up is paid once.
// Usage: NODE_PATH=.npm-tools/node_modules node tests/gltf_transform_batch.js COMMAND OUTDIR FILE...
// writes OUTDIR/<name of FILE's folder>.glb for each FILE with `gltf-transform COMMAND FILE OUT`
// and prints one JSON line per file: {"input", "output", "ok"}; a file the command fails on is
// "ok": false (its message on stderr).  Exit 2 when the CLI cannot be loaded.
const path = require('path');
const { pathToFileURL } = require('url');

(async () => {
  const [command, outdir, ...files] = process.argv.slice(2);
  const cli = require.resolve('@gltf-transform/cli');  // dist/cli.mjs, what bin/cli.js imports
  const { program, programReady } = await import(pathToFileURL(cli).href);
  program.disableGlobalOption('--silent');
  await programReady;
  for (const file of files) {
    const output = path.join(outdir, `${path.basename(path.dirname(file))}.glb`);
    let ok = true;
    try {
      await program.exec([command, file, output]);
    } catch (e) {
      console.error(`${file}: ${e && e.message || e}`);
      ok = false;
    }
    console.log(JSON.stringify({ input: file, output, ok }));
  }
})().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(2);
});
