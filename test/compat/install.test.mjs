/**
 * Every way users install the package lands it alone, and n8n loads it: on one n8n of the compat matrix,
 * chosen by COMPAT_PROFILE (a profile of tools/n8n-install.mjs, `default` when unset).
 *
 *   npm run build && COMPAT_PROFILE=min node --test test/compat/install.test.mjs
 *   COMPAT_QUEUE=1 …   also queue mode: a worker that lacks the package (PostgreSQL, Redis, the emulator)
 *
 * The packed tarball is served by a local registry (registry.mjs); IMAGEPACK_TARBALL names a packed one.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { NODE_RUNTIMES, ensureNodeRuntime, installPaths, isInstalled } from '../../tools/n8n-install.mjs';
import { packPackage, publishWorkflow, REPO_ROOT, restSession, runCommand } from '../e2e/n8n.mjs';
import {
	elapsed,
	findPackages,
	installByHand,
	listModules,
	nodeRuntimes,
	OWNER,
	restData,
	servedNodeTypes,
	setupOwnerAndLogin,
	shimmedN8nEnv,
	startCompatN8n,
	tempDir,
	writeNpmShim,
} from './install.mjs';
import { startCompatQueue } from './queue.mjs';
import { startRegistry } from './registry.mjs';

const profile = process.env.COMPAT_PROFILE || 'default';
const paths = installPaths(profile);
const version = paths.profile.n8n;
const NODE_TYPES = ['n8n-nodes-imagepack.imagePack', 'n8n-nodes-imagepack.imagePackTrigger'];
/** npm reads the optional peer's packument (to check the peer set) but must never fetch its tarball. */
const DECOYS = { 'n8n-workflow': '2.41.0' };
const keep = !!process.env.KEEP_E2E;

function log(message) {
	process.stderr.write(`[compat-install ${profile}] ${message}\n`);
}

/** The registry requests allowed for an install of the package alone: its packument and tarball, and the decoy's packument. */
function assertOnlyPackageRequested(registry, requests, what) {
	const allowed = new Set([`/${registry.name}`, `/${registry.name}/-/${registry.tarballName}`, ...Object.keys(DECOYS).map((name) => `/${name}`)]);
	const other = requests.filter((entry) => entry.kind === 'registry' && !allowed.has(decodeURIComponent(entry.url.split('?')[0])));
	assert.deepEqual(other, [], `${what}: npm asked the registry for more than the package:\n${registry.describe(other)}`);
	const decoyTarballs = requests.filter((entry) => registry.decoyTarballs().includes(entry));
	assert.deepEqual(decoyTarballs, [], `${what}: npm downloaded a peer (${registry.describe(decoyTarballs)})`);
	assert.ok(
		requests.some((entry) => entry.url === `/${registry.name}/-/${registry.tarballName}` && entry.status === 200),
		`${what}: the package's tarball was never downloaded from the local registry:\n${registry.describe(requests)}`,
	);
}

/** The nodes folder holds the package and nothing else; no n8n-workflow at any depth. */
function assertAlone(nodesDir, name, what) {
	assert.deepEqual(listModules(path.join(nodesDir, 'node_modules')), [name], `${what}: ${nodesDir}/node_modules holds more than ${name}`);
	assert.deepEqual(findPackages(nodesDir, 'n8n-workflow'), [], `${what}: a copy of n8n-workflow landed beside the package`);
	const inner = path.join(nodesDir, 'node_modules', name, 'node_modules');
	assert.deepEqual(listModules(inner), [], `${what}: the package brought dependencies of its own (${inner})`);
}

describe(`installing the package in n8n ${version} (profile ${profile})`, { skip: !isInstalled(profile) && `n8n profile ${profile} is not installed (node tools/n8n-install.mjs --profile=${profile})` }, () => {
	let tarball;
	let registry;
	const folders = [];
	const folder = (prefix) => {
		const dir = tempDir(prefix);
		folders.push(dir);
		return dir;
	};

	before(async () => {
		tarball = process.env.IMAGEPACK_TARBALL;
		if (!tarball) {
			tarball = await packPackage({ build: !fs.existsSync(path.join(REPO_ROOT, 'dist')) });
			folders.push(path.dirname(tarball));
		}
		registry = await startRegistry({ tarball, decoys: DECOYS });
	});
	after(async () => {
		await registry?.stop();
		if (!keep) for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
	});

	describe("the README's by-hand install (npm install in ~/.n8n/nodes)", () => {
		const runtimes = nodeRuntimes();
		const installed = new Map();
		const profileMajor = (paths.profile.node ?? process.versions.node).split('.')[0];

		for (const major of ['20', '22', '24']) {
			it(`npm on Node ${major} lands the package alone`, async (t) => {
				// A major this machine and its n8n installs lack comes from the npm registry (about 30 MB, cached).
				const runtime = runtimes.get(major) ?? { bin: await ensureNodeRuntime(NODE_RUNTIMES[major]), version: NODE_RUNTIMES[major], from: 'the npm registry' };
				const dir = folder(`byhand-node${major}`);
				const result = await installByHand({ registry, nodeBin: runtime.bin, dir });
				t.diagnostic(`Node ${runtime.version} (${runtime.from}): exit ${result.code} in ${result.ms} ms`);
				log(`by hand, npm on Node ${runtime.version}: exit ${result.code} in ${result.ms} ms; registry: ${registry.describe(result.requests).replace(/\n/g, '; ')}`);
				assert.equal(result.code, 0, `npm install exited with ${result.code}:\n${result.stdout}\n${result.stderr}`);
				assertOnlyPackageRequested(registry, result.requests, `npm on Node ${major}`);
				assertAlone(result.nodesDir, registry.name, `npm on Node ${major}`);
				const manifest = JSON.parse(fs.readFileSync(path.join(result.nodesDir, 'package.json'), 'utf8'));
				assert.deepEqual(Object.keys(manifest.dependencies ?? {}), [registry.name], 'the nodes folder package.json lists the package');
				installed.set(major, dir);
			});
		}

		it(`n8n ${version} loads the nodes installed by hand`, async (t) => {
			const major = installed.has(profileMajor) ? profileMajor : [...installed.keys()][0];
			assert.ok(major, 'no by-hand install succeeded');
			const dir = installed.get(major);
			const started = Date.now();
			const n8n = await startCompatN8n({ userFolder: dir, profile, env: { N8N_SECURE_COOKIE: 'false' } });
			try {
				const client = await setupOwnerAndLogin(n8n.url);
				const types = await servedNodeTypes(client);
				for (const type of NODE_TYPES) assert.ok(types.has(type), `${type} is not among the ${types.size} node types n8n serves`);
				assert.doesNotMatch(n8n.logs(), /Failed to load package|Unrecognized node type/);
			} finally {
				await n8n.stop();
			}
			t.diagnostic(`folder installed by npm on Node ${major}; n8n start + check in ${elapsed(started)}`);
			// The other Node versions' installs are the same files: what n8n loaded above holds for them.
			const tree = (root) => runCommand('sh', ['-c', 'find . -type f ! -name .package-lock.json | sort | xargs sha256sum'], { cwd: path.join(root, '.n8n', 'nodes', 'node_modules') });
			const reference = (await tree(dir)).stdout;
			for (const [other, otherDir] of installed) {
				if (other === major) continue;
				assert.equal((await tree(otherDir)).stdout, reference, `npm on Node ${other} installed different files than npm on Node ${major}`);
			}
		});
	});

	it('control: without peerDependenciesMeta, npm would install the n8n-workflow peer', async () => {
		// Proves that the checks above can fail: the same package with a required "*" peer.
		const dir = folder('control');
		await execTar(['-xzf', tarball, '-C', dir]);
		const manifestFile = path.join(dir, 'package', 'package.json');
		const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
		delete manifest.peerDependenciesMeta;
		fs.writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
		const variant = path.join(dir, 'variant.tgz');
		await execTar(['-czf', variant, '-C', dir, 'package']);
		const variantRegistry = await startRegistry({ tarball: variant, decoys: DECOYS });
		try {
			const result = await installByHand({ registry: variantRegistry, nodeBin: process.execPath, dir: path.join(dir, 'user') });
			assert.equal(result.code, 0, result.stderr);
			assert.deepEqual(result.modules, [registry.name, 'n8n-workflow'].sort(), 'npm installs a required "*" peer');
			assert.equal(variantRegistry.decoyTarballs().length, 1);
		} finally {
			await variantRegistry.stop();
		}
	});

	describe("n8n's editor installer (POST /rest/community-packages)", () => {
		it('installs the package alone from the registry n8n runs npm against, and n8n loads it after a restart', async (t) => {
			const dir = folder('editor');
			const shim = writeNpmShim({ dir: path.join(dir, 'npm-shim'), registryUrl: registry.url, nodeBin: paths.nodeBin });
			const env = shimmedN8nEnv({ shim, registry });
			const before = registry.requests.length;
			let started = Date.now();
			let n8n = await startCompatN8n({ userFolder: dir, profile, env });
			let answer;
			try {
				t.diagnostic(`n8n ready in ${elapsed(started)}`);
				const client = await setupOwnerAndLogin(n8n.url);
				started = Date.now();
				answer = await client.post('/rest/community-packages', { name: registry.name, verify: false, version: registry.version });
				t.diagnostic(`POST /rest/community-packages: HTTP ${answer.status} in ${elapsed(started)}`);
				log(`editor install: HTTP ${answer.status} in ${elapsed(started)}; npm calls: ${shim.calls().map((call) => call.args).join(' | ')}`);
				const installed = restData(answer, 'POST /rest/community-packages');
				assert.equal(installed.packageName, registry.name);
				assert.equal(installed.installedVersion, registry.version);
				assert.deepEqual(installed.installedNodes.map((node) => node.type).sort(), NODE_TYPES, 'the REST answer lists the two nodes');
			} catch (error) {
				error.message += `\n--- npm calls\n${JSON.stringify(shim.calls(), null, 1)}\n--- registry\n${registry.describe(registry.requests.slice(before))}\n--- n8n log (tail)\n${n8n.logs().slice(-4000)}`;
				throw error;
			} finally {
				await n8n.stop();
			}
			const requests = registry.requests.slice(before);
			log(`editor install: registry ${registry.describe(requests).replace(/\n/g, '; ')}`);
			assertOnlyPackageRequested(registry, requests, "n8n's installer");
			const nodesDir = path.join(dir, '.n8n', 'nodes');
			assertAlone(nodesDir, registry.name, "n8n's installer");
			assert.ok(shim.calls().length > 0, 'n8n never ran the npm on PATH');

			started = Date.now();
			n8n = await startCompatN8n({ userFolder: dir, profile, env });
			try {
				const client = await restSession(n8n.url, OWNER);
				const types = await servedNodeTypes(client);
				for (const type of NODE_TYPES) assert.ok(types.has(type), `after a restart, ${type} is not among the ${types.size} node types n8n serves`);
				const listed = restData(await client.get('/rest/community-packages'), 'GET /rest/community-packages');
				const entry = listed.find((p) => p.packageName === registry.name);
				assert.ok(entry, `GET /rest/community-packages does not list ${registry.name}`);
				assert.notEqual(entry.failedLoading, true, 'n8n reports the package as failed to load');
			} finally {
				await n8n.stop();
			}
			t.diagnostic(`restart and checks in ${elapsed(started)}; n8n's own outbound calls (refused): ${registry.describe(registry.proxied()) || 'none'}`);
		});
	});

	describe('queue mode: a worker that lacks the package', { skip: process.env.COMPAT_QUEUE !== '1' && 'COMPAT_QUEUE=1 runs it' }, () => {
		it('reinstalls it alone at startup (N8N_REINSTALL_MISSING_PACKAGES) and runs Image Pack Generate', async (t) => {
			const { emulatorCredential, waitFor, withCredential } = await import('../e2e/fixtures.mjs');
			const { callWebhook, webhookGenerateWorkflow } = await import('../e2e/queue.mjs');
			// The emulator is TypeScript: tsImport keeps plain `node --test` enough to run this file.
			const { tsImport } = await import('tsx/esm/api');
			const { startEmulator } = await tsImport('../emulator/index.ts', import.meta.url);
			const emulator = await startEmulator({ port: 0 });
			const cluster = await startCompatQueue({ profile, registry, workDir: folder('queue'), nodeBin: paths.nodeBin });
			const step = (() => {
				let last = Date.now();
				return (what) => {
					t.diagnostic(`${what}: ${elapsed(last)}`);
					last = Date.now();
				};
			})();
			let main;
			let worker;
			try {
				// 1. The main installs the package through the editor installer while a worker without it runs:
				//    n8n tells running workers over Redis (command community-package-install), and each installs it.
				//    Started one after the other: n8n 1.x has no lock around its schema migrations.
				main = await cluster.startMain();
				const live = await cluster.startWorker('live-worker');
				const client = await setupOwnerAndLogin(main.url);
				restData(await client.post('/rest/community-packages', { name: registry.name, verify: false, version: registry.version }), 'install on the main');
				assertAlone(path.join(cluster.folder('main'), '.n8n', 'nodes'), registry.name, "the main's install");
				const liveNodes = path.join(cluster.folder('live-worker'), '.n8n', 'nodes');
				await waitFor(() => /Community package installed/.test(live.logs()) && fs.existsSync(path.join(liveNodes, 'node_modules', registry.name, 'package.json')), {
					timeoutMs: 120_000,
					what: "the running worker's install after the main's",
				});
				log(`queue: the running worker's npm calls: ${cluster.shim('live-worker').calls().map((call) => call.args).join(' | ') || 'none'}`);
				assertAlone(liveNodes, registry.name, "the running worker's install");
				step('main and a running worker: start, owner, editor install (the worker installs too)');

				// 2. A credential for the emulator and a Webhook → Generate workflow, saved through the main's REST API
				//    (2.0.3's import:workflow writes no workflow history, and its publish:workflow then fails),
				//    published with the CLI once the main is stopped: the restarted main activates it.
				const credential = restData(await client.post('/rest/credentials', { ...emulatorCredential(emulator), id: undefined }), 'create credential');
				const webhookPath = `compat-queue-${randomUUID().slice(0, 8)}`;
				const { nodes, connections, settings } = withCredential(
					webhookGenerateWorkflow({ id: undefined, name: 'compat: queue generate', path: webhookPath, webhookId: randomUUID() }),
					credential,
				);
				// `active: false` as the editor sends it (2.0.3 fails with a null `active` otherwise).
				const { id } = restData(await client.post('/rest/workflows', { name: 'compat: queue generate', nodes, connections, settings, active: false }), 'create workflow');
				await Promise.all([main.stop(), live.stop()]);
				await publishWorkflow(cluster.folder('main'), id, { profile, env: cluster.sharedEnv });
				step('credential and workflow saved, main and worker stopped, workflow published');

				// 3. The main again. A worker started now without the package and without the setting only warns.
				main = await cluster.startMain();
				const plain = await cluster.startWorker('plain-worker');
				await plain.stop();
				assert.match(plain.logs(), /n8n detected that some packages are missing/, 'a worker without N8N_REINSTALL_MISSING_PACKAGES says the package is missing');
				assert.deepEqual(listModules(path.join(cluster.folder('plain-worker'), '.n8n', 'nodes', 'node_modules')), [], 'a worker without the setting installs nothing');
				assert.deepEqual(cluster.shim('plain-worker').calls(), [], 'a worker without the setting runs no npm');
				step('main restarted; a worker without the setting started and stopped (it only warns)');

				// 4. A worker whose user folder has no package, told to reinstall missing ones.
				const before = registry.requests.length;
				worker = await cluster.startWorker('worker', { N8N_REINSTALL_MISSING_PACKAGES: 'true' });
				step('worker started with N8N_REINSTALL_MISSING_PACKAGES (its reinstall included)');
				const workerNodes = path.join(cluster.folder('worker'), '.n8n', 'nodes');
				const calls = cluster.shim('worker').calls();
				log(`queue: the worker's npm calls: ${calls.map((call) => call.args).join(' | ') || 'none'}`);
				assert.ok(calls.some((call) => call.args.startsWith('pack ')), `the worker did not reinstall the package through npm:\n${worker.logs().slice(-3000)}`);
				assertAlone(workerNodes, registry.name, "the worker's reinstall");
				assertOnlyPackageRequested(registry, registry.requests.slice(before), "the worker's reinstall");

				// 5. That worker runs Generate against the emulator.
				const answer = await callWebhook(main.url, webhookPath, 'A white ceramic mug on an oak table');
				assert.equal(answer.status, 200, JSON.stringify(answer.body));
				assert.equal(answer.body.images?.length, 2, JSON.stringify(answer.body));
				const executions = await cluster.postgres.query('SELECT id, status, mode FROM execution_entity WHERE "workflowId" = $1', [id]);
				assert.equal(executions.length, 1, JSON.stringify(executions));
				assert.ok(worker.logs().includes(`Worker started execution ${executions[0].id} (`), `the worker's log does not say it ran execution ${executions[0].id}`);
				step('Generate through the webhook, run by the worker');
			} catch (error) {
				error.message += `\n--- worker log (tail)\n${worker?.logs().slice(-3000) ?? '(not started)'}\n--- main log (tail)\n${main?.logs().slice(-2000) ?? ''}`;
				throw error;
			} finally {
				await cluster.stop();
				await emulator.close();
			}
		});
	});
});

function execTar(args) {
	fs.mkdirSync(args[args.indexOf('-C') + 1], { recursive: true });
	return runCommand('tar', args).then((result) => {
		if (result.code !== 0) throw new Error(`tar ${args.join(' ')}: ${result.stderr}`);
	});
}
