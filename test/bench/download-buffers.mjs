// `node --expose-gc test/bench/download-buffers.mjs [--mib=4] [--runs=6]`: how many bytes of
// ArrayBuffers Node's own HTTP client allocates to receive one file, read and dropped chunk by chunk
// (nothing kept, nothing written). Every download in n8n goes through this client, so these bytes are
// the least any node (or n8n's HTTP Request node) adds to V8's external memory per file. The server is a
// child process, so its buffers are not counted; no collection runs during a download (checked).
import http from 'node:http';
import { PerformanceObserver } from 'node:perf_hooks';

import { startFileServer } from './file-server.mjs';

if (!globalThis.gc) {
	console.error('run with node --expose-gc');
	process.exit(2);
}
const option = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const bytes = option('mib', 4) * 2 ** 20;
const runs = option('runs', 6);

const server = await startFileServer(bytes);

let collections = 0;
new PerformanceObserver((list) => (collections += list.getEntries().length)).observe({ entryTypes: ['gc'] });
const download = () =>
	new Promise((resolve, reject) => {
		http
			.get(server.url, { agent: false }, (res) => {
				let chunks = 0;
				res.on('data', () => chunks++);
				res.on('end', () => resolve(chunks));
				res.on('error', reject);
			})
			.on('error', reject);
	});

await download(); // warm-up
for (let run = 0; run < runs; run++) {
	collections = 0;
	globalThis.gc();
	// The observer reports the forced collection a little later: wait for it before counting.
	for (let waited = 0; collections === 0 && waited < 2000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
	collections = 0;
	const before = process.memoryUsage().arrayBuffers;
	const chunks = await download();
	const grown = process.memoryUsage().arrayBuffers - before;
	await new Promise((resolve) => setTimeout(resolve, 50));
	console.log(
		`${(bytes / 2 ** 20).toFixed(1)} MiB file in ${chunks} chunks: ${(grown / 2 ** 20).toFixed(1)} MiB of ArrayBuffers (${(grown / bytes).toFixed(2)} × the file)` +
			(collections ? `, ${collections} collection(s) ran: not counted reliably` : ''),
	);
}
server.close();
