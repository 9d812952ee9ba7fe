/**
 * A tiny npm registry on 127.0.0.1 that serves one package: the packed tarball of this repository, under
 * its name. It answers the packument (`GET /<name>`, also the encoded and `/<name>/<version|tag>` forms
 * npm may use) and the tarball; everything else is a 404. Every request is recorded, so that a test can
 * assert what npm (or n8n through npm) asked for.
 *
 * Decoys: npm reads the packument of an optional peer (n8n-workflow) while it builds its tree, even though
 * it does not install it. Answering that with a 404 would prove nothing about what npm does when the real
 * registry has the package, so a decoy name gets a real-looking packument and a real (tiny) tarball; the
 * test then asserts that the decoy's tarball was never fetched and nothing of it landed.
 *
 * The same server is also an HTTP(S) proxy that refuses everything (CONNECT and absolute-URL requests get
 * a 403, recorded): n8n's own HTTP calls to api.n8n.io and to the default npm registry (HTTPS_PROXY
 * pointed here) then fail as on a machine without internet, and the test sees which hosts n8n tried.
 *
 * Plain Node (ESM), no dependencies: tarballs are read and made with `tar`.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

/** The package.json inside an npm tarball (`package/package.json`). */
export function readTarballManifest(tarball) {
	return JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json']).toString('utf8'));
}

/** The fields of a package.json that a registry puts into a version's entry of the packument. */
const VERSION_FIELDS = [
	'name',
	'version',
	'description',
	'license',
	'homepage',
	'keywords',
	'author',
	'repository',
	'engines',
	'n8n',
	'dependencies',
	'peerDependencies',
	'peerDependenciesMeta',
	'optionalDependencies',
];

/** A tiny tarball of a package that only has a package.json (a decoy). */
function makeDecoyTarball(manifest) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'imagepack-decoy-'));
	try {
		fs.mkdirSync(path.join(dir, 'package'));
		fs.writeFileSync(path.join(dir, 'package', 'package.json'), JSON.stringify(manifest, null, 2));
		execFileSync('tar', ['-czf', 'decoy.tgz', 'package'], { cwd: dir });
		return fs.readFileSync(path.join(dir, 'decoy.tgz'));
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}

/** One package the registry serves: its manifest, tarball bytes and their digests. */
function servedPackage(manifest, bytes, mtime) {
	return {
		manifest,
		bytes,
		mtime,
		tarballName: `${manifest.name.split('/').pop()}-${manifest.version}.tgz`,
		shasum: createHash('sha1').update(bytes).digest('hex'),
		integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
	};
}

/**
 * Starts the registry. `decoys` maps a package name to the version to pretend it has (e.g.
 * `{ 'n8n-workflow': '2.41.0' }`). Returns { url, port, name, version, manifest, shasum, integrity,
 * requests, registryRequests(), proxied(), unexpected(), served(), decoyTarballs(), stop() }: `requests`
 * lists every request as { kind: 'registry' | 'proxy', method, url, status, at }.
 */
export async function startRegistry({ tarball, decoys = {}, host = '127.0.0.1' }) {
	const main = servedPackage(readTarballManifest(tarball), fs.readFileSync(tarball), fs.statSync(tarball).mtime);
	const packages = new Map([[main.manifest.name, main]]);
	for (const [decoyName, decoyVersion] of Object.entries(decoys)) {
		const manifest = { name: decoyName, version: decoyVersion, description: 'A decoy served by the compat tests' };
		packages.set(decoyName, { ...servedPackage(manifest, makeDecoyTarball(manifest), new Date()), decoy: true });
	}
	const requests = [];
	let url;

	function versionEntry(served) {
		const entry = { _id: `${served.manifest.name}@${served.manifest.version}` };
		for (const field of VERSION_FIELDS) if (served.manifest[field] !== undefined) entry[field] = served.manifest[field];
		entry.dist = { tarball: `${url}/${served.manifest.name}/-/${served.tarballName}`, shasum: served.shasum, integrity: served.integrity };
		return entry;
	}
	function packument(served) {
		const { name, version, description, license } = served.manifest;
		const time = served.mtime.toISOString();
		return {
			_id: name,
			name,
			description,
			'dist-tags': { latest: version },
			versions: { [version]: versionEntry(served) },
			time: { created: time, modified: time, [version]: time },
			license,
		};
	}

	const server = http.createServer((request, response) => {
		// A request line with an absolute URL is a client using this server as its HTTP proxy.
		const proxied = /^[a-z]+:\/\//i.test(request.url);
		const entry = { kind: proxied ? 'proxy' : 'registry', method: request.method, url: request.url, status: 404, at: Date.now() };
		requests.push(entry);
		const answer = (status, type, body) => {
			entry.status = status;
			response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
			response.end(request.method === 'HEAD' ? undefined : body);
		};
		const json = (status, value) => answer(status, 'application/json', JSON.stringify(value));
		if (proxied) return json(403, { error: 'No internet here' });
		if (request.method !== 'GET' && request.method !== 'HEAD') return json(404, { error: 'Not found' });
		// npm asks for `/name`, a scoped name as `/@scope%2fname`; n8n's version check for `/name/version`.
		const route = decodeURIComponent(new URL(request.url, 'http://registry').pathname).replace(/\/+$/, '');
		for (const [name, served] of packages) {
			if (route === `/${name}`) return json(200, packument(served));
			if (route === `/${name}/${served.manifest.version}` || route === `/${name}/latest`) return json(200, versionEntry(served));
			if (route === `/${name}/-/${served.tarballName}`) return answer(200, 'application/octet-stream', served.bytes);
		}
		return json(404, { error: 'Not found' });
	});
	// HTTPS through a proxy starts with CONNECT host:443: refused, so the client fails as if offline.
	server.on('connect', (request, socket) => {
		requests.push({ kind: 'proxy', method: 'CONNECT', url: request.url, status: 403, at: Date.now() });
		socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
	});
	await new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, host, resolve);
	});
	const { port } = server.address();
	url = `http://${host}:${port}`;
	const registryRequests = () => requests.filter((entry) => entry.kind === 'registry');

	return {
		url,
		port,
		name: main.manifest.name,
		version: main.manifest.version,
		manifest: main.manifest,
		shasum: main.shasum,
		integrity: main.integrity,
		tarballName: main.tarballName,
		packument: () => packument(main),
		requests,
		registryRequests,
		proxied: () => requests.filter((entry) => entry.kind === 'proxy'),
		unexpected: () => registryRequests().filter((entry) => entry.status === 404),
		served: () => registryRequests().filter((entry) => entry.status === 200),
		/** Requests for a decoy's tarball (a decoy that npm actually installed). */
		decoyTarballs: () =>
			registryRequests().filter((entry) => [...packages.values()].some((p) => p.decoy && entry.url.endsWith(`/-/${p.tarballName}`))),
		/** How the requests so far look, one line each, for failure messages. */
		describe: (list = requests) => list.map((entry) => `${entry.method} ${entry.url} → ${entry.status}`).join('\n'),
		/** Stops the server (and its kept-alive connections). */
		stop() {
			server.closeAllConnections?.();
			return new Promise((resolve) => server.close(() => resolve()));
		},
	};
}

