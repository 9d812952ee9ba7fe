// One memory measurement in a fresh process (spawned by run.mjs with --expose-gc --import tsx).
// argv[2]: JSON { run: DownloadRun, warmupFileUrl?, sampleMs }. Prints one JSON line with the result.
import { ImagePack } from '../../nodes/ImagePack/ImagePack.node.ts';
import { prepareDownload, generatedFileUrls, runDownload, useNodeClass } from './download.bench.ts';

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

const { run, warmupFileUrl, fileUrls: givenUrls, sampleMs = 5 } = JSON.parse(process.argv[2]);

/** The floor: a bare client (node:http, 302 then the signed link, piped to a file), no n8n. */
async function bareDownload(urls) {
	const get = (url, headers = {}) => new Promise((resolve, reject) => http.get(url, { headers }, resolve).on('error', reject));
	fs.mkdirSync(run.storageDir, { recursive: true });
	const sizes = [];
	for (const [index, url] of urls.entries()) {
		const redirect = await get(new URL(url, run.baseUrl), { authorization: `Bearer ${run.apiKey}` });
		redirect.resume();
		const file = path.join(run.storageDir, `bare-${index}`);
		await pipeline(await get(new URL(redirect.headers.location, run.baseUrl)), fs.createWriteStream(file));
		sizes.push(fs.statSync(file).size);
	}
	return { files: sizes.length, sizes };
}
const bare = run.mode === 'bare';
useNodeClass(ImagePack);
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

if (bare) await bareDownload([warmupFileUrl]);
else await prepareDownload(run, warmupFileUrl);
const fileUrls = givenUrls ?? (run.mode === 'download' ? await generatedFileUrls(run) : []);
for (let i = 0; i < 3; i++) {
	globalThis.gc?.();
	await settle();
}

const baseline = process.memoryUsage();
const kernelPeakBefore = process.resourceUsage().maxRSS * 1024;
const peak = { rss: baseline.rss, heapUsed: baseline.heapUsed, external: baseline.external, arrayBuffers: baseline.arrayBuffers };
const sample = () => {
	const now = process.memoryUsage();
	for (const key of Object.keys(peak)) if (now[key] > peak[key]) peak[key] = now[key];
};
const timer = setInterval(sample, sampleMs);
const started = performance.now();
const result = bare ? await bareDownload(fileUrls) : await runDownload(run, fileUrls);
const ms = performance.now() - started;
clearInterval(timer);
sample();
const kernelPeakAfter = process.resourceUsage().maxRSS * 1024;
// The kernel's high-water mark catches a spike between two samples, but only when it passes the
// process's earlier peak (start-up); otherwise the 5 ms samples are all there is.
const kernelPeak = kernelPeakAfter > kernelPeakBefore ? kernelPeakAfter : 0;

process.stdout.write(
	`${JSON.stringify({
		...result,
		ms,
		baselineRss: baseline.rss,
		peakRss: Math.max(peak.rss, kernelPeak),
		sampledPeakRss: peak.rss,
		kernelPeakRss: kernelPeak || null,
		growth: {
			rss: Math.max(peak.rss, kernelPeak) - baseline.rss,
			heapUsed: peak.heapUsed - baseline.heapUsed,
			external: peak.external - baseline.external,
			arrayBuffers: peak.arrayBuffers - baseline.arrayBuffers,
		},
	})}\n`,
);
process.exit(0);
