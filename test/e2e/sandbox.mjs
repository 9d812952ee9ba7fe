/**
 * `npm run sandbox`: the Image Pack API emulator and the pinned n8n (2.41.1) with this package installed,
 * a ready credential, the example workflows and an owner account — one command on a fresh clone.
 * Ctrl-C stops everything.
 *
 *   npm run sandbox                              # n8n on :5678, emulator on :4010 (+ :4011), listing stand-in on :4012
 *   npm run sandbox -- --reset                   # start from an empty n8n (deletes the sandbox's workflows and executions)
 *   npm run sandbox -- --port 5679 --emulator-port 4020 --listen 0.0.0.0
 *   npm run sandbox -- --no-build                # use the current dist/ as is
 *
 * The first run installs n8n 2.41.1 and Node 24 into ~/.cache/n8n-nodes-imagepack (about 5 minutes,
 * ~3 GB); later runs start in about 20 seconds. The n8n data (workflows you create, executions) lives in
 * ~/.cache/n8n-nodes-imagepack/sandbox and survives restarts; the emulator starts empty every time.
 */
import fs from 'node:fs';
import path from 'node:path';

import {
	LISTING_PLACEHOLDER,
	emulatorCredential,
	exampleWorkflows,
	pointListingAt,
	startCollector,
	startTestEmulator,
	withCredential,
} from './fixtures.mjs';
import { cacheRoot, ensureN8n, installPaths, isInstalled } from './n8n-install.mjs';
import { createUserFolder, importCredential, importWorkflow, ownerEnv, packPackage, publishWorkflow, querySqlite, startN8n } from './n8n.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
	const index = args.indexOf(`--${name}`);
	if (index >= 0) return args[index + 1];
	const inline = args.find((a) => a.startsWith(`--${name}=`));
	return inline ? inline.split('=')[1] : fallback;
};
const N8N_PORT = Number(option('port', process.env.N8N_PORT ?? 5678));
const EMULATOR_PORT = Number(option('emulator-port', 4010));
const LISTING_PORT = EMULATOR_PORT + 2;
const LISTEN = option('listen', '127.0.0.1');
const SANDBOX_DIR = path.join(cacheRoot(), 'sandbox');
const OWNER = { email: 'owner@example.com', password: 'Sandbox-Password-1' };
const CREDENTIAL = { id: 'imagePackSandbox', name: 'Image Pack (sandbox emulator)' };
const LISTING_WORKFLOW = 'ipxPublishToList';

const say = (message = '') => process.stdout.write(`${message}\n`);
const step = (message) => process.stderr.write(`[sandbox] ${message}\n`);

const running = [];
let stopping = false;
async function stopAll(code = 0) {
	if (stopping) return;
	stopping = true;
	step('stopping…');
	for (const stop of running.reverse()) {
		try {
			await stop();
		} catch (error) {
			step(`while stopping: ${error.message}`);
		}
	}
	process.exit(code);
}
process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));

/** Where a port is taken, say which option moves it. */
function portHint(error, port, flag) {
	if (error?.code === 'EADDRINUSE' || /EADDRINUSE|address already in use/i.test(String(error?.message))) {
		return new Error(`Port ${port} is in use. Stop what uses it or pass --${flag} <another port>.`);
	}
	return error;
}

async function main() {
	const started = Date.now();
	if (!isInstalled()) {
		step(`first run: installing n8n ${installPaths().profile.n8n} and Node ${installPaths().profile.node} into ${installPaths().dir}`);
		step('this takes about 5 minutes (≈3 GB), once; later runs reuse it.');
	}
	await ensureN8n();

	const tarball = await packPackage({ build: !args.includes('--no-build') });

	// The emulator (fresh every start) with a few publications to read, and a stand-in listing service.
	const emulator = await startTestEmulator({ port: EMULATOR_PORT, filePort: EMULATOR_PORT + 1, host: LISTEN }).catch((error) => {
		throw portHint(error, EMULATOR_PORT, 'emulator-port');
	});
	running.push(() => emulator.close());
	await emulator.control.publish({ packId: 'pk_mugs' });
	await emulator.control.publish({ packId: 'pk_totes', schemaVersion: 2, publishedAt: Date.parse('2026-08-01T00:00:00Z') });
	await emulator.control.publish({ packId: 'pk_mugs' });

	const listing = await startCollector({
		port: LISTING_PORT,
		host: LISTEN,
		onRequest: (request) => {
			const file = Object.values(request.files)[0];
			const fields = Object.entries(request.fields).map(([k, v]) => `${k}=${v.length > 40 ? `${v.slice(0, 40)}…` : v}`);
			say(`[listing] ${request.method} ${request.path}  ${file ? `${file.name} (${file.type}, ${file.bytes.length} bytes)` : ''}  ${fields.join('  ')}`);
		},
	}).catch((error) => {
		throw portHint(error, LISTING_PORT, 'emulator-port');
	});
	running.push(() => listing.close());

	// The n8n user folder: kept between runs (unless --reset); the package is replaced by the fresh tarball.
	if (args.includes('--reset')) fs.rmSync(SANDBOX_DIR, { recursive: true, force: true });
	fs.rmSync(path.join(SANDBOX_DIR, '.n8n', 'nodes', 'node_modules', 'n8n-nodes-imagepack'), { recursive: true, force: true });
	await createUserFolder({ tarball, dir: SANDBOX_DIR });
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	const firstRun = !fs.existsSync(path.join(SANDBOX_DIR, '.n8n', 'database.sqlite'));

	const credential = { ...emulatorCredential(emulator, CREDENTIAL) };
	step(firstRun ? 'importing the credential and the example workflows…' : 'updating the credential…');
	await importCredential(SANDBOX_DIR, credential);
	const examples = exampleWorkflows().map(({ workflow }) =>
		withCredential(workflow.id === LISTING_WORKFLOW ? pointListingAt(workflow, listing.url) : workflow, credential),
	);
	const existing = firstRun
		? new Set()
		: new Set((await querySqlite(SANDBOX_DIR, 'SELECT id FROM workflow_entity')).map((row) => row.id));
	const missing = examples.filter((workflow) => !existing.has(workflow.id));
	if (missing.length) {
		await importWorkflow(SANDBOX_DIR, missing);
		if (missing.some((workflow) => workflow.id === LISTING_WORKFLOW)) await publishWorkflow(SANDBOX_DIR, LISTING_WORKFLOW);
	}
	// The emulator starts empty: the trigger must not keep a position from the previous emulator.
	await querySqlite(SANDBOX_DIR, 'UPDATE workflow_entity SET staticData = NULL WHERE id = ?', [LISTING_WORKFLOW]);

	step(`starting n8n on port ${N8N_PORT}…`);
	const logFile = path.join(SANDBOX_DIR, 'n8n.log');
	const n8n = await startN8n({
		userFolder: SANDBOX_DIR,
		port: N8N_PORT,
		env: {
			N8N_LISTEN_ADDRESS: LISTEN,
			N8N_SECURE_COOKIE: 'false',
			...ownerEnv({ ...OWNER, firstName: 'Sandbox' }),
			GENERIC_TIMEZONE: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC',
		},
		readyTimeoutMs: 180_000,
	}).catch((error) => {
		throw portHint(error, N8N_PORT, 'port');
	});
	running.push(() => n8n.stop());
	const log = fs.createWriteStream(logFile);
	log.write(n8n.logs());
	n8n.process.stdout.pipe(log);
	n8n.process.stderr.pipe(log);
	n8n.process.on('exit', (code) => {
		if (!stopping) {
			step(`n8n exited (${code}); its log: ${logFile}`);
			stopAll(1);
		}
	});

	const url = `http://localhost:${N8N_PORT}`;
	const emulatorUrl = emulator.baseUrl;
	say(`
Image Pack sandbox is ready (${((Date.now() - started) / 1000).toFixed(0)} s)

  n8n         ${url}
              log in as ${OWNER.email} / ${OWNER.password}
  emulator    ${emulatorUrl}   (the Image Pack API; key ${emulator.apiKey})
              credential "${CREDENTIAL.name}" is set up and used by the examples
  listing     ${listing.url}   (stands in for ${LISTING_PLACEHOLDER}; uploads are printed here)
  n8n log     ${logFile}

First steps
  1. Open ${url} and log in.
  2. Open "Image Pack: scheduled batch generation" and click "Execute workflow".
     Three products get two images each; click "Generate images" to see them (Binary tab: image_0, image_1).
  3. "Image Pack: new publication → listing" is published: publish a pack in the emulator
       curl -X POST ${emulatorUrl}/_emulator/publications -H 'Content-Type: application/json' -d '{}'
     and within a minute its images are uploaded to the listing stand-in (printed below).
  4. Try the node yourself: add "Image Pack" to a new workflow (Generate, Get Publication with ids 1-3,
     Get Many, Download File). The emulator's control API: test/emulator/README.md.

Ctrl-C stops everything.
`);
}

main().catch(async (error) => {
	step(`FAILED: ${error.message}`);
	await stopAll(1);
});
