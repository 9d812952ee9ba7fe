// `node test/bench/download-collections.mjs [--files=100] [--live-mib=200] [--young-mib=0]`: why
// downloads cost n8n full collections. A process holding a live heap about n8n's size downloads 4 MiB
// files back to back and writes each to disk as n8n's binary-data store does (`fs.promises.writeFile`
// of the response stream), and counts V8's collections per file. Each file leaves 8 MiB of
// ArrayBuffers (download-buffers.mjs); with little JavaScript allocated beside them no scavenge runs,
// so they wait for a full collection of the whole heap. `--young-mib=16` allocates that much
// short-lived JavaScript per file: scavenges then run, free the buffers on the way, and the full
// collections nearly stop. Which of the two a node's downloads get in n8n depends on how much
// JavaScript runs beside them, not on how the node streams (this script's findings are in
// docs/performance.md). The file server is a child process, so its buffers are not counted.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';

import { startFileServer } from './file-server.mjs';

const option = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const files = option('files', 100);
const liveMib = option('live-mib', 200);
const youngMib = option('young-mib', 0);
const bytes = 4 * 2 ** 20;

const server = await startFileServer(bytes);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'download-collections-'));

// A live heap of small objects, as n8n's is (about 100 bytes each).
const live = Array.from({ length: (liveMib * 2 ** 20) / 100 }, (_, i) => ({ i, name: `n${i}`, list: [i] }));
let kept = 0;
const youngGarbage = () => {
	const objects = [];
	for (let i = 0; i < (youngMib * 2 ** 20) / 64; i++) objects.push({ i, name: `y${i}` });
	kept = objects.length;
};

const collections = { scavenges: 0, markCompacts: 0 };
new PerformanceObserver((list) => {
	for (const entry of list.getEntries()) {
		if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) collections.scavenges++;
		if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) collections.markCompacts++;
	}
}).observe({ entryTypes: ['gc'] });

const download = async (index) => {
	const response = await new Promise((resolve, reject) =>
		http.get(server.url, { agent: false }, resolve).on('error', reject),
	);
	await fs.promises.writeFile(path.join(dir, `file-${index % 4}.png`), response);
	if (youngMib) youngGarbage();
};

await download(0); // warm-up
await new Promise((resolve) => setTimeout(resolve, 200));
collections.scavenges = collections.markCompacts = 0;
const cpu = process.cpuUsage();
const started = performance.now();
for (let index = 0; index < files; index++) await download(index);
const used = process.cpuUsage(cpu);
await new Promise((resolve) => setTimeout(resolve, 100)); // the observer reports a little later
console.log(
	`${files} × 4 MiB, live heap ${liveMib} MiB, ${youngMib} MiB of young JavaScript per file: ` +
		`${(collections.markCompacts / files).toFixed(2)} mark-compacts and ${(collections.scavenges / files).toFixed(2)} scavenges per file, ` +
		`CPU ${((used.user + used.system) / 1000 / files).toFixed(1)} ms and wall ${((performance.now() - started) / files).toFixed(0)} ms per file ` +
		`(Node ${process.version}; ${live.length} live objects, ${kept} young ones per file)`,
);
server.close();
fs.rmSync(dir, { recursive: true, force: true });
