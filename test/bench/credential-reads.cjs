// Preloaded into n8n (`NODE_OPTIONS=--require <this file>`, beside n8n-profiler.cjs) by `npm run bench
// -- --n8n --n8n-parts=credentials` (credentials.bench.mjs): counts and times every credential read of
// a node in an execution, n8n-core's NodeExecutionContext `_getCredentials` (what `getCredentials(type,
// itemIndex)` runs: the database read of the credential, its decryption, its expressions resolved for
// the item). It follows the profiler's runs: the bench writes the run's label to
// <BENCH_N8N_PROF_DIR>/next-label and sends SIGUSR2 at the start and at the end; at the start the
// counters are reset, at the end <label>.credentials.json is written: { calls, wallMs, cpuMs } (the
// time from call to answer, and the process's CPU over the same spans; the reads of one node run are
// made one after the other, so the spans do not overlap).
// CommonJS: it runs before n8n loads.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_N8N_PROF_DIR;
if (dir) {
	let label = null;
	let counters = { calls: 0, wallMs: 0, cpuMs: 0 };
	let wrapped = false;
	function wrap() {
		if (wrapped) return;
		const suffix = path.join(
			'n8n-core',
			'dist',
			'execution-engine',
			'node-execution-context',
			'node-execution-context.js',
		);
		const proto = Object.entries(require.cache).find(([file]) => file.endsWith(suffix))?.[1]
			?.exports?.NodeExecutionContext?.prototype;
		if (!proto?._getCredentials) return; // not loaded yet: tried again at the next run
		wrapped = true;
		const original = proto._getCredentials;
		proto._getCredentials = async function (...args) {
			const cpu = process.cpuUsage();
			const started = performance.now();
			try {
				return await original.apply(this, args);
			} finally {
				const used = process.cpuUsage(cpu);
				counters.calls++;
				counters.wallMs += performance.now() - started;
				counters.cpuMs += (used.user + used.system) / 1000;
			}
		};
	}
	process.on('SIGUSR2', () => {
		let next;
		try {
			next = fs.readFileSync(path.join(dir, 'next-label'), 'utf8').trim();
		} catch {
			return;
		}
		if (next !== label) {
			wrap();
			label = next;
			counters = { calls: 0, wallMs: 0, cpuMs: 0 };
		} else {
			fs.writeFileSync(
				path.join(dir, `${label}.credentials.json`),
				JSON.stringify({ label, wrapped, ...counters }),
			);
			label = null;
		}
	});
}
