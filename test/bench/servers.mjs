// Child process of the benchmark launcher: the emulator, plus a "realistic file host" in front of it.
// Run as `node --import tsx test/bench/servers.mjs`; prints one JSON line with the endpoints, stops on
// SIGTERM or when its stdin closes (the launcher went away).
//
// The realistic host proxies every request to the emulator except the file routes: /api/file/<name>
// answers 302 to /signed/<name> on the same host (like the API), and /signed/<name> streams
// BENCH_IMAGE_BYTES of incompressible bytes as image/png (64 KiB for names starting small-, the warm-up; N MiB for names starting mibN-). The emulator's own PNGs are 1-bit palette
// images (a 4K one is a few KiB), far smaller than a real 4K image, so the memory benchmark needs this.
// GET /_bench/stats answers the counters (requests, connections accepted, file routes); ?reset zeroes them.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';

import { startEmulator } from '../emulator/index.ts';

const imageBytes = Number(process.env.BENCH_IMAGE_BYTES ?? 16 * 1024 * 1024);
const emulator = await startEmulator({ port: 0, requestLogLimit: 250_000 });
const upstream = new URL(emulator.baseUrl);
const block = randomBytes(64 * 1024);
// connections: TCP connections accepted, to see whether a client reuses them (keep-alive) or opens one per request.
const fresh = () => ({ file: 0, signedFile: 0, keyOnSignedLink: 0, proxied: 0, requests: 0, connections: 0, lists: 0, details: 0, proxyErrors: 0, firstAt: 0, lastAt: 0 });
let stats = fresh();

function imageStream(size) {
	return Readable.from(
		(function* () {
			for (let sent = 0; sent < size; sent += block.length) yield block.subarray(0, Math.min(block.length, size - sent));
		})(),
	);
}

let origin = '';
const host = http.createServer((req, res) => {
	const url = new URL(req.url ?? '/', 'http://bench');
	if (url.pathname === '/_bench/stats') {
		stats.connections--; // the caller's own connection (one per call)
		res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...stats, imageBytes }));
		if (url.searchParams.has('reset')) stats = fresh();
		return;
	}
	stats.requests++;
	stats.lastAt = Date.now();
	stats.firstAt ||= stats.lastAt;
	let match = /^\/api\/file\/([^/]+)$/.exec(url.pathname);
	if (match && req.method === 'GET') {
		stats.file++;
		if (!req.headers.authorization) {
			res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"unauthorized"}}');
			return;
		}
		res.writeHead(302, { location: `${origin}/signed/${match[1]}?expires=0&signature=bench`, 'content-length': '0' }).end();
		return;
	}
	match = /^\/signed\/([^/]+)$/.exec(url.pathname);
	if (match && req.method === 'GET') {
		const sized = /^mib(\d+)-/.exec(match[1]);
		const size = match[1].startsWith('small-') ? 64 * 1024 : sized ? Number(sized[1]) * 1024 * 1024 : imageBytes;
		stats.signedFile++;
		if (req.headers.authorization) stats.keyOnSignedLink++;
		res.writeHead(200, {
			'content-type': 'image/png',
			'content-length': String(size),
			'content-disposition': `inline; filename="${match[1]}"`,
		});
		imageStream(size).pipe(res);
		return;
	}
	stats.proxied++;
	if (/^\/api\/v1\/image-pack-publications\/?$/.test(url.pathname)) stats.lists++;
	else if (/^\/api\/v1\/image-pack-publications\/\d+$/.test(url.pathname)) stats.details++;
	const forward = http.request(
		// A fresh connection per request: a kept-alive one that the emulator closes while idle resets the next request.
		{ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent: false },
		(answer) => {
			res.writeHead(answer.statusCode ?? 502, answer.headers);
			answer.pipe(res);
		},
	);
	forward.on('error', () => {
		stats.proxyErrors++;
		res.destroy();
	});
	req.pipe(forward);
});
host.on('connection', () => stats.connections++);
await new Promise((resolve) => host.listen(0, '127.0.0.1', resolve));
origin = `http://127.0.0.1:${host.address().port}`;

process.stdout.write(
	`${JSON.stringify({
		baseUrl: emulator.baseUrl,
		fileBaseUrl: emulator.fileBaseUrl,
		apiKey: emulator.apiKey,
		accountId: emulator.accountId,
		realisticBaseUrl: origin,
		imageBytes,
	})}\n`,
);

let stopping = false;
const stop = async () => {
	if (stopping) return;
	stopping = true;
	host.closeAllConnections();
	host.close();
	await emulator.close();
	process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();
