// A proxy-wasm 0.2.1 host over Node's V8, small enough to read: runs dist/toolfit.wasm as Envoy would for
// N requests of one body, one plugin (cache off unless CONFIG says), and prints the median time of the
// request callbacks over the last half, one process (one VM) per SEED given: the VM's random seed (the
// 16 bytes of `random_get` that key Rust's hash maps) is fixed by it. The cold rewrite of the huge
// catalog is bimodal by process, whatever the seed (docs/performance.md). Run it as Envoy compiles,
// TurboFan only:
//   node --no-liftoff bench/proxy_host.mjs dist/toolfit.wasm BODY.json N [SEED...]
// BODY.json is a request body, or a catalog of tests/corpus/servers (sent as an OpenAI chat request
// with those tools, as make bench-envoy does): tests/corpus/servers/twilio-all-services.json is its huge.
// CONFIG (plugin JSON), ROUTE (the route's name, default chat) and CHUNK (body slice size) in the
// environment. The host implements what the filter calls on this path; any other import answers 0.
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const [, script, file, bodyFile, count, ...seeds] = process.argv;
if (!file || !bodyFile) {
  console.error('usage: node --no-liftoff bench/proxy_host.mjs MODULE.wasm BODY.json N [SEED...]');
  process.exit(2);
}
if (seeds.length > 1) {
  // one process per seed: a VM's seed is drawn once, as in Envoy
  for (const s of seeds) {
    const r = spawnSync(process.execPath, [...process.execArgv, script, file, bodyFile, count, s], { encoding: 'utf8' });
    process.stdout.write(r.stdout + r.stderr);
  }
  process.exit(0);
}
const n = +(count || 20);
let seed = seeds.length ? +seeds[0] : Math.floor(Math.random() * 2 ** 31);
const seedShown = seed;
// a catalog of tests/corpus/servers (an MCP server's tools/list) becomes the OpenAI chat request
// make bench-envoy sends for it
const raw = readFileSync(bodyFile);
const listed = JSON.parse(raw).tools;
const body = listed?.[0]?.inputSchema
  ? Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(1000) }],
    tools: listed.map((t) => ({ type: 'function', function: { name: t.name, description: t.description ?? '', parameters: t.inputSchema } })) }))
  : raw;
const config = Buffer.from(process.env.CONFIG || '{"profile":"llama-cpp","framing":"exact","cache_bytes":0}');
const module = await WebAssembly.compile(readFileSync(file));
let instance;
const u8 = () => new Uint8Array(instance.exports.memory.buffer);
const view = () => new DataView(instance.exports.memory.buffer);
const text = (p, l) => Buffer.from(u8().slice(p, p + l)).toString();
// hands bytes to the module: memory it allocates, the pointer and size written where it asked
const give = (bytes, pp, ps) => {
  const p = instance.exports.proxy_on_memory_allocate(bytes.length || 1);
  u8().set(bytes, p);
  view().setUint32(pp, p, true);
  view().setUint32(ps, bytes.length, true);
  return 0;
};
// a header map as proxy-wasm serialises it: count, (key size, value size) pairs, then key\0value\0...
const pairs = (list) => {
  const head = Buffer.alloc(4 + list.length * 8);
  head.writeUInt32LE(list.length, 0);
  list.forEach(([k, v], i) => { head.writeUInt32LE(Buffer.byteLength(k), 4 + i * 8); head.writeUInt32LE(Buffer.byteLength(v), 8 + i * 8); });
  return Buffer.concat([head, ...list.flatMap(([k, v]) => [Buffer.from(k), Buffer.alloc(1), Buffer.from(v), Buffer.alloc(1)])]);
};
let headers = [], held = Buffer.alloc(0);
const shared = new Map();
const NOT_FOUND = 1, REQUEST_BODY = 0, PLUGIN_CONFIGURATION = 7;
const env = {
  proxy_log: (level, p, l) => { if (process.env.SHOWLOG) console.error(level, text(p, l)); return 0; },
  proxy_get_buffer_bytes: (type, start, max, pp, ps) => {
    const b = type === PLUGIN_CONFIGURATION ? config : type === REQUEST_BODY ? held : Buffer.alloc(0);
    return give(b.subarray(start, start + (max >>> 0)), pp, ps);  // max is a u32 (usize::MAX reads as -1)
  },
  proxy_get_header_map_pairs: (type, pp, ps) => give(pairs(type === 0 ? headers : []), pp, ps),
  proxy_get_header_map_value: (type, kp, kl, pp, ps) => {
    const h = (type === 0 ? headers : []).find(([k]) => k === text(kp, kl));
    return h ? give(Buffer.from(h[1]), pp, ps) : NOT_FOUND;
  },
  proxy_get_property: (p, l, pp, ps) => text(p, l) === 'xds\0route_name' ? give(Buffer.from(process.env.ROUTE || 'chat'), pp, ps) : NOT_FOUND,
  proxy_get_current_time_nanoseconds: (p) => { view().setBigUint64(p, process.hrtime.bigint(), true); return 0; },
  proxy_define_metric: (type, p, l, id) => { view().setUint32(id, 1, true); return 0; },
  proxy_get_shared_data: (kp, kl, pp, ps, cas) => {
    const v = shared.get(text(kp, kl));
    if (!v) return NOT_FOUND;
    give(v.bytes, pp, ps);
    view().setUint32(cas, v.cas, true);
    return 0;
  },
  proxy_set_shared_data: (kp, kl, vp, vl) => {
    const k = text(kp, kl);
    shared.set(k, { bytes: Buffer.from(u8().slice(vp, vp + vl)), cas: (shared.get(k)?.cas ?? 0) + 1 });
    return 0;
  },
};
const wasi = {
  random_get: (p, l) => {
    const a = u8();
    for (let i = 0; i < l; i++) { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; a[p + i] = (seed >>> 16) & 255; }
    return 0;
  },
  environ_sizes_get: (a, b) => { view().setUint32(a, 0, true); view().setUint32(b, 0, true); return 0; },
  fd_write: (fd, iov, cnt, written) => { view().setUint32(written, 0, true); return 0; },
};
const others = { get: (o, k) => o[k] || (() => 0) };
instance = await WebAssembly.instantiate(module, { env: new Proxy(env, others), wasi_snapshot_preview1: new Proxy(wasi, others) });
const E = instance.exports;
E._initialize?.();
E.proxy_on_context_create(1, 0);
E.proxy_on_vm_start(1, 0);
if (!E.proxy_on_configure(1, config.length)) {
  console.error('the plugin refused its configuration (SHOWLOG=1 says why)');
  process.exit(1);
}
const times = [];
for (let i = 0; i < n; i++) {
  const ctx = 100 + i;
  headers = [[':method', 'POST'], [':path', '/v1/chat/completions'], [':authority', 'bench'], ['content-type', 'application/json'], ['content-length', String(body.length)]];
  E.proxy_on_context_create(ctx, 1);
  const t0 = performance.now();
  E.proxy_on_request_headers(ctx, headers.length, 0);
  const step = +(process.env.CHUNK || body.length);
  for (let at = step; ; at += step) {
    held = body.subarray(0, Math.min(at, body.length));  // while paused, Envoy hands over all it holds
    E.proxy_on_request_body(ctx, held.length, at >= body.length ? 1 : 0);
    if (at >= body.length) break;
  }
  times.push(performance.now() - t0);
  E.proxy_on_done(ctx);
  E.proxy_on_log(ctx);
  E.proxy_on_delete(ctx);
}
console.log("memory", instance.exports.memory.buffer.byteLength);
const last = times.slice(Math.floor(n / 2)).sort((a, b) => a - b);
console.log(`seed ${seedShown}: ${last[Math.floor(last.length / 2)].toFixed(4)} ms a request (median of the last ${last.length}; the first ${times[0].toFixed(1)} ms)`);
