// Preloaded into n8n (`NODE_OPTIONS=--require <this file>`) by `npm run bench -- --n8n
// --n8n-prof=<dir>`: profiles one measured run at a time, not n8n's start. The bench writes the run's
// label to <dir>/next-label and sends SIGUSR2 to start; a second SIGUSR2 stops and writes
// <label>.cpuprofile (V8 CPU profile), <label>.heapprofile (sampled allocations, including objects
// already collected: the garbage, not only what is still alive) and <label>.json (the process's own
// CPU time and V8's garbage collections by kind over the run), then <label>.done.
// Read them with `node test/bench/cpu-profile.mjs <file>`. With BENCH_N8N_PROF_GC_ONLY set
// (`--n8n-gc-stats=<dir>`) only <label>.json is written: no profiler slows the run down.
// BENCH_N8N_TRACE_GC=1 also turns on V8's --trace-gc --trace-incremental-marking over each run (n8n's
// stdout: add BENCH_N8N_ECHO=1 to see it), which says why each collection started.
// Every run starts with a full collection, before its CPU is counted: otherwise the garbage the previous
// run left, and the heap limit V8 set from its allocation rate, fall on the next build's CPU
// (BENCH_N8N_NO_COLLECT=1 to leave the heap as it is).
// n8n's deduplication store (the durable record of paid sends, generate/durable.ts) is timed in every
// run: each call of DeduplicationHelper's checkProcessedAndRecord / removeProcessed /
// getProcessedDataCount, its wall time from call to answer (the row read, the JSON, the SQLite write),
// in <label>.json as `store`; with a file <dir>/store-off present when a run starts, the store answers
// in place instead (every value new, nothing read or written; a count answers the number the file holds,
// 0 if none, so the node takes the same path as on the row it stands for: the node's code unchanged,
// without the database round trip). A SIGUSR2 with
// <dir>/command.json present runs that command instead of starting or stopping a run: `storeCalls`
// makes `calls` sequential checkProcessedAndRecord calls of one new value each (then removeProcessed of
// the same values) on a row the bench prepared, through n8n's own DataDeduplicationService, and
// writes <label>.json (each call's wall time, the process's CPU) and <label>.done.
// CommonJS: it runs before n8n loads.
'use strict';
const fs = require('node:fs');
const inspector = require('node:inspector');
const path = require('node:path');
const { PerformanceObserver, constants } = require('node:perf_hooks');

// BENCH_N8N_V8_FLAGS: V8 flags for n8n, set here because NODE_OPTIONS refuses most of them (e.g.
// --external-memory-accounted-in-global-limit, docs/performance.md).
if (process.env.BENCH_N8N_V8_FLAGS) require('node:v8').setFlagsFromString(process.env.BENCH_N8N_V8_FLAGS);

const dir = process.env.BENCH_N8N_PROF_DIR;
const gcOnly = Boolean(process.env.BENCH_N8N_PROF_GC_ONLY);
if (dir) {
	const GC_KINDS = {
		[constants.NODE_PERFORMANCE_GC_MINOR]: 'minor (scavenge)',
		[constants.NODE_PERFORMANCE_GC_MAJOR]: 'major (mark-compact)',
		[constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
		[constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
	};
	let session;
	let run;
	const post = (method, params) =>
		new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
	const observer = new PerformanceObserver((list) => {
		if (!run) return;
		for (const entry of list.getEntries()) {
			if (entry.startTime < run.started) continue; // the collection that started the run
			const kind = GC_KINDS[entry.detail?.kind] ?? `kind ${entry.detail?.kind}`;
			const row = (run.gc[kind] ??= { count: 0, ms: 0 });
			row.count++;
			row.ms += entry.duration;
			if (entry.detail?.flags & constants.NODE_PERFORMANCE_GC_FLAGS_ALL_EXTERNAL_MEMORY) run.externalMemoryGcs++;
		}
	});
	let collect;
	async function start() {
		const label = fs.readFileSync(path.join(dir, 'next-label'), 'utf8').trim();
		if (!process.env.BENCH_N8N_NO_COLLECT) {
			// Set here, not at load: only n8n's main process (the one signalled) gets a `gc`.
			if (!collect) {
				require('node:v8').setFlagsFromString('--expose-gc');
				collect = require('node:vm').runInNewContext('gc');
			}
			collect();
		}
		if (!gcOnly) await startProfilers();
		if (process.env.BENCH_N8N_TRACE_GC)
			require('node:v8').setFlagsFromString('--trace-gc --trace-incremental-marking');
		timeStore();
		run = {
			label,
			gc: {},
			store: {},
			storeOff: fs.existsSync(path.join(dir, 'store-off')),
			storeOffCount: fs.existsSync(path.join(dir, 'store-off'))
				? Number(fs.readFileSync(path.join(dir, 'store-off'), 'utf8').trim() || 0)
				: 0,
			externalMemoryGcs: 0,
			cpu: process.cpuUsage(),
			started: performance.now(),
		};
		observer.observe({ entryTypes: ['gc'] });
		fs.writeFileSync(path.join(dir, `${label}.started`), '');
	}
	async function startProfilers() {
		if (!session) {
			session = new inspector.Session();
			session.connect();
		}
		await post('Profiler.enable');
		await post('Profiler.setSamplingInterval', { interval: 500 });
		await post('HeapProfiler.enable');
		// Every 16 KiB allocated, one sample; collected objects stay in the profile.
		await post('HeapProfiler.startSampling', {
			samplingInterval: 16384,
			includeObjectsCollectedByMajorGC: true,
			includeObjectsCollectedByMinorGC: true,
		});
		await post('Profiler.start');
	}
	async function stop() {
		const { label, gc, externalMemoryGcs } = run;
		const store = {
			...Object.fromEntries(storeMethods.map((method) => [method, timings(run.store[method])])),
			answeredInPlace: run.store.answeredInPlace ?? 0,
			cpuMs: run.store.cpuMs ?? 0,
		};
		const cpu = process.cpuUsage(run.cpu);
		const wallMs = performance.now() - run.started;
		run = undefined;
		observer.disconnect();
		if (process.env.BENCH_N8N_TRACE_GC) require('node:v8').setFlagsFromString('--no-trace-gc --no-trace-incremental-marking');
		if (!gcOnly) {
			const { profile } = await post('Profiler.stop');
			const { profile: heap } = await post('HeapProfiler.stopSampling');
			fs.writeFileSync(path.join(dir, `${label}.cpuprofile`), JSON.stringify(profile));
			fs.writeFileSync(path.join(dir, `${label}.heapprofile`), JSON.stringify(heap));
		}
		const cpuMs = (cpu.user + cpu.system) / 1000;
		fs.writeFileSync(
			path.join(dir, `${label}.json`),
			JSON.stringify({ label, wallMs, cpuMs, gc, externalMemoryGcs, store }, null, 1),
		);
		fs.writeFileSync(path.join(dir, `${label}.done`), '');
	}
	// n8n's modules, once loaded (CommonJS: in require.cache under their paths).
	const loaded = (suffix) =>
		Object.entries(require.cache).find(([file]) => file.endsWith(suffix))?.[1]?.exports;
	const storeMethods = ['checkProcessedAndRecord', 'removeProcessed', 'getProcessedDataCount'];
	let timedStore = false;
	let storeInFlight = 0;
	let storeCpuFrom;
	function timeStore() {
		if (timedStore) return;
		const helper = loaded(path.join('n8n', 'dist', 'deduplication', 'deduplication-helper.js'));
		const proto = helper?.DeduplicationHelper?.prototype;
		if (!proto) return; // not loaded yet: tried again at the next run
		timedStore = true;
		for (const method of storeMethods) {
			const original = proto[method];
			proto[method] = async function (...args) {
				// `store-off` (read when a run starts): answered in place, as if every value were new.
				if (run?.storeOff) {
					run.store.answeredInPlace = (run.store.answeredInPlace ?? 0) + 1;
					// The count answers the node's row (the sends' row); the claims' row is small.
					if (method === 'getProcessedDataCount') return args[0] === 'node' ? run.storeOffCount : 0;
					return method === 'checkProcessedAndRecord' ? { new: args[0], processed: [] } : undefined;
				}
				const started = performance.now();
				// The process's CPU while at least one store call is in flight (at one lane, between
				// generations, little else runs then: the store's own cost).
				if (storeInFlight++ === 0) storeCpuFrom = process.cpuUsage();
				try {
					return await original.apply(this, args);
				} finally {
					if (run) (run.store[method] ??= []).push(performance.now() - started);
					if (--storeInFlight === 0 && run) {
						const used = process.cpuUsage(storeCpuFrom);
						run.store.cpuMs = (run.store.cpuMs ?? 0) + (used.user + used.system) / 1000;
					}
				}
			};
		}
	}
	const timings = (list = []) => {
		const sorted = [...list].sort((a, b) => a - b);
		const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
		return {
			calls: sorted.length,
			totalMs: sorted.reduce((sum, ms) => sum + ms, 0),
			medianMs: at(0.5),
			p90Ms: at(0.9),
			maxMs: sorted.at(-1) ?? 0,
		};
	};
	/** The raw cost of n8n's store: `calls` sequential calls on the row the bench prepared. */
	async function storeCalls({ label, workflowId, nodeId, calls, maxEntries }) {
		const service = Object.entries(require.cache)
			.filter(([file]) =>
				file.endsWith(path.join('n8n-core', 'dist', 'data-deduplication-service.js')),
			)
			.map(([, module]) => module.exports.DataDeduplicationService?.instance)
			.find(Boolean);
		if (!service) throw new Error("n8n's DataDeduplicationService is not initialised");
		const context = { workflow: { id: workflowId }, node: { id: nodeId } };
		const options = { mode: 'entries', maxEntries };
		const values = Array.from({ length: calls }, (_, i) => `bench raw call ${label} ${i}`);
		const measure = async (method) => {
			const times = [];
			const cpu = process.cpuUsage();
			const started = performance.now();
			for (const value of values) {
				const callStarted = performance.now();
				await service[method]([value], 'node', context, options);
				times.push(performance.now() - callStarted);
			}
			const used = process.cpuUsage(cpu);
			return {
				...timings(times),
				wallMs: performance.now() - started,
				cpuMs: (used.user + used.system) / 1000,
			};
		};
		if (!process.env.BENCH_N8N_NO_COLLECT) {
			require('node:v8').setFlagsFromString('--expose-gc');
			require('node:vm').runInNewContext('gc')();
		}
		const record = await measure('checkProcessedAndRecord');
		const remove = await measure('removeProcessed');
		fs.writeFileSync(
			path.join(dir, `${label}.json`),
			JSON.stringify({ label, record, remove }, null, 1),
		);
		fs.writeFileSync(path.join(dir, `${label}.done`), '');
	}
	async function command() {
		const file = path.join(dir, 'command.json');
		if (!fs.existsSync(file)) return false;
		const order = JSON.parse(fs.readFileSync(file, 'utf8'));
		fs.rmSync(file);
		if (order.command === 'storeCalls') await storeCalls(order);
		return true;
	}
	let busy = Promise.resolve();
	process.on('SIGUSR2', () => {
		busy = busy
			.then(async () => {
				if (run) await stop();
				else if (!(await command())) await start();
			})
			.catch((error) => process.stderr.write(`n8n-profiler: ${error.stack}\n`));
	});
}
