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
import { pathToFileURL } from 'node:url';

import {
	LISTING_PLACEHOLDER,
	emulatorCredential,
	exampleWorkflows,
	pointListingAt,
	startCollector,
	startTestEmulator,
	withCredential,
	withModelCredential,
} from '../test/e2e/fixtures.mjs';
import { cacheRoot, ensureN8n, installPaths, isInstalled } from './n8n-install.mjs';
import { createUserFolder, importCredential, importWorkflow, ownerEnv, packPackage, publishWorkflow, querySqlite, startN8n } from '../test/e2e/n8n.mjs';

const SANDBOX_DIR = path.join(cacheRoot(), 'sandbox');
/** The owner account the README names; the sandbox and the editor suite log in with it. */
export const OWNER = { email: 'owner@example.com', password: 'Sandbox-Password-1' };
export const CREDENTIAL = { id: 'imagePackSandbox', name: 'Image Pack (sandbox emulator)' };
const LISTING_WORKFLOW = 'ipxPublishToList';

const step = (message) => process.stderr.write(`[sandbox] ${message}\n`);
const say = (message = '') => process.stdout.write(`${message}\n`);

/** Where a port is taken, say which option moves it. */
function portHint(error, port, flag) {
	if (error?.code === 'EADDRINUSE' || /EADDRINUSE|address already in use/i.test(String(error?.message))) {
		return new Error(`Port ${port} is in use. Stop what uses it or pass --${flag} <another port>.`);
	}
	return error;
}

/**
 * Starts the sandbox: the emulator with a few publications, the listing stand-in, and n8n with the
 * package, the credential, the example workflows (plus `workflows`, given the credential too) and the
 * owner account. Port 0 picks free ports. `modelCredential` (an openAiApi credential, e.g. the scripted
 * model's) is imported too and filled into the examples' OpenAI Chat Model, so the AI example's chat runs.
 * Returns { url, emulator, listing, n8n, logFile, stop() }; stop() stops everything it started.
 */
export async function startSandbox({
	n8nPort = 5678,
	emulatorPort = 4010,
	listen = '127.0.0.1',
	dir = SANDBOX_DIR,
	reset = false,
	build = true,
	tarball,
	workflows = [],
	n8nEnv = {},
	modelCredential,
} = {}) {
	const running = [];
	const stop = async () => {
		for (const stopOne of running.reverse()) {
			try {
				await stopOne();
			} catch (error) {
				step(`while stopping: ${error.message}`);
			}
		}
	};
	try {
		await ensureN8n();
		const packed = tarball ?? (await packPackage({ build }));

		// The emulator (fresh every start) with a few publications to read, and a stand-in listing service.
		const emulator = await startTestEmulator({
			port: emulatorPort,
			filePort: emulatorPort ? emulatorPort + 1 : 0,
			host: listen,
		}).catch((error) => {
			throw portHint(error, emulatorPort, 'emulator-port');
		});
		running.push(() => emulator.close());
		await emulator.control.publish({ packId: 'pk_mugs' });
		await emulator.control.publish({ packId: 'pk_totes', schemaVersion: 2, publishedAt: Date.parse('2026-08-01T00:00:00Z') });
		await emulator.control.publish({ packId: 'pk_mugs' });

		const listing = await startCollector({
			port: emulatorPort ? emulatorPort + 2 : 0,
			host: listen,
			onRequest: (request) => {
				const file = Object.values(request.files)[0];
				const fields = Object.entries(request.fields).map(([k, v]) => `${k}=${v.length > 40 ? `${v.slice(0, 40)}…` : v}`);
				say(`[listing] ${request.method} ${request.path}  ${file ? `${file.name} (${file.type}, ${file.bytes.length} bytes)` : ''}  ${fields.join('  ')}`);
			},
		}).catch((error) => {
			throw portHint(error, emulatorPort + 2, 'emulator-port');
		});
		running.push(() => listing.close());

		// The n8n user folder: kept between runs (unless reset); the package is replaced by the fresh tarball.
		if (reset) fs.rmSync(dir, { recursive: true, force: true });
		fs.rmSync(path.join(dir, '.n8n', 'nodes', 'node_modules', 'n8n-nodes-imagepack'), { recursive: true, force: true });
		await createUserFolder({ tarball: packed, dir });
		if (!tarball) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
		const firstRun = !fs.existsSync(path.join(dir, '.n8n', 'database.sqlite'));

		const credential = { ...emulatorCredential(emulator, CREDENTIAL) };
		step(firstRun ? 'importing the credential and the example workflows…' : 'updating the credential…');
		await importCredential(dir, modelCredential ? [credential, modelCredential] : credential);
		const examples = [...exampleWorkflows().map(({ workflow }) => workflow), ...workflows].map((workflow) => {
			const filled = withCredential(workflow.id === LISTING_WORKFLOW ? pointListingAt(workflow, listing.url) : workflow, credential);
			return modelCredential ? withModelCredential(filled, modelCredential) : filled;
		});
		const existing = firstRun ? new Set() : new Set((await querySqlite(dir, 'SELECT id FROM workflow_entity')).map((row) => row.id));
		const missing = examples.filter((workflow) => !existing.has(workflow.id));
		if (missing.length) {
			await importWorkflow(dir, missing);
			if (missing.some((workflow) => workflow.id === LISTING_WORKFLOW)) await publishWorkflow(dir, LISTING_WORKFLOW);
		}
		// The emulator starts empty: the trigger must not keep a position from the previous emulator.
		await querySqlite(dir, 'UPDATE workflow_entity SET staticData = NULL WHERE id = ?', [LISTING_WORKFLOW]);

		step(`starting n8n on port ${n8nPort || '(free)'}…`);
		const logFile = path.join(dir, 'n8n.log');
		const n8n = await startN8n({
			userFolder: dir,
			port: n8nPort || undefined,
			env: {
				N8N_LISTEN_ADDRESS: listen,
				N8N_SECURE_COOKIE: 'false',
				...ownerEnv({ ...OWNER, firstName: 'Sandbox' }),
				GENERIC_TIMEZONE: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC',
				...n8nEnv,
			},
			readyTimeoutMs: 180_000,
		}).catch((error) => {
			throw portHint(error, n8nPort, 'port');
		});
		running.push(() => n8n.stop());
		const log = fs.createWriteStream(logFile);
		log.write(n8n.logs());
		n8n.process.stdout.pipe(log);
		n8n.process.stderr.pipe(log);
		return { url: `http://localhost:${n8n.port}`, emulator, listing, n8n, credential, logFile, stop };
	} catch (error) {
		await stop();
		throw error;
	}
}

async function main() {
	const args = process.argv.slice(2);
	const option = (name, fallback) => {
		const index = args.indexOf(`--${name}`);
		if (index >= 0) return args[index + 1];
		const inline = args.find((a) => a.startsWith(`--${name}=`));
		return inline ? inline.split('=')[1] : fallback;
	};
	const started = Date.now();
	if (!isInstalled()) {
		step(`first run: installing n8n ${installPaths().profile.n8n} and Node ${installPaths().profile.node} into ${installPaths().dir}`);
		step('this takes about 5 minutes (≈3 GB), once; later runs reuse it.');
	}
	const sandbox = await startSandbox({
		n8nPort: Number(option('port', process.env.N8N_PORT ?? 5678)),
		emulatorPort: Number(option('emulator-port', 4010)),
		listen: option('listen', '127.0.0.1'),
		reset: args.includes('--reset'),
		build: !args.includes('--no-build'),
	});
	let stopping = false;
	const stopAll = async (code) => {
		if (stopping) return;
		stopping = true;
		step('stopping…');
		await sandbox.stop();
		process.exit(code);
	};
	process.on('SIGINT', () => stopAll(0));
	process.on('SIGTERM', () => stopAll(0));
	sandbox.n8n.process.on('exit', (code) => {
		if (!stopping) {
			step(`n8n exited (${code}); its log: ${sandbox.logFile}`);
			stopAll(1);
		}
	});

	const { url, emulator, listing, logFile } = sandbox;
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

// Run as `npm run sandbox`; imported (the editor suite), it only exports startSandbox.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
	main().catch((error) => {
		step(`FAILED: ${error.message}`);
		process.exit(1);
	});
}
