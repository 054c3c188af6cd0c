// Runs a wasm32-wasip1 command (a cargo bench built for wasm) in Node's V8, the engine Envoy embeds:
// `node bench/wasi_run.mjs FILE.wasm ARGS...`. The library's proxy-wasm imports are never called by a
// bench; they are stubbed so the module instantiates.
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';

const wasi = new WASI({ version: 'preview1', args: process.argv.slice(2), env: {}, preopens: { '/': '/' } });
const module = await WebAssembly.compile(readFileSync(process.argv[2]));
const imports = wasi.getImportObject();
imports.env = Object.fromEntries(WebAssembly.Module.imports(module).filter((i) => i.module === 'env').map((i) => [i.name, () => 0]));
const instance = await WebAssembly.instantiate(module, imports);
// the cdylib's reactor entry is not for a command: start it as one
wasi.start({ exports: { memory: instance.exports.memory, _start: instance.exports._start } });
