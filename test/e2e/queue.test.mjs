/**
 * The package on n8n's distributed engine: n8n 2.41.1 in queue mode (EXECUTIONS_MODE=queue) with a main
 * instance, two workers, PostgreSQL and Redis, all started here as child processes (queue.mjs,
 * services.mjs), the packed package installed on every instance, the emulator as the API.
 *
 *   start everything → webhook Generate on a worker, binaries read back from the main (database mode)
 *   → 20 webhook calls over both workers → credential test and Fetch Test Event through the REST API
 *   → the trigger polls on the main, its executions run on workers, a late-committed publication
 *   → a worker killed mid-execution → main and workers restarted (binary data now `filesystem` in a
 *   shared folder) → crash recovery, the user's retry, exactly-once tally, Fetch Test Event on a worker.
 *
 * `npm run test:queue` runs this file alone. Needs PostgreSQL and redis-server: installed with apt-get
 * when missing and running as root, else the suite is skipped with one line saying what to install.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { emulatorCredential, node, startTestEmulator, waitFor, withCredential } from './fixtures.mjs';
import { ensureN8n, packPackage } from './n8n.mjs';
import { callWebhook as postToWebhook, ok, startQueueCluster, webhookGenerateWorkflow } from './queue.mjs';
import { ensureQueueServices } from './services.mjs';

const services = ensureQueueServices();
if (!services.ok) process.stderr.write(`[queue] SKIPPED: ${services.reason}\n`);

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const IMAGE_PACK = 'n8n-nodes-imagepack.imagePack';
const TRIGGER = 'On new publication';
const WEBHOOK_PATH = 'ipx-queue-generate';
/** Generation time in the emulator: long enough for 20 executions to overlap on two workers. */
const GENERATE_MS = 1500;
const CONCURRENCY = 10;
/**
 * Shorter than n8n's defaults (lock 60 s, renewed every 10 s, stalled check every 30 s) so that a job
 * whose worker was killed is given up within seconds instead of about a minute and a half.
 */
const WORKER_LOCKS = { QUEUE_WORKER_LOCK_DURATION: '10000', QUEUE_WORKER_LOCK_RENEW_TIME: '2000', QUEUE_WORKER_STALLED_INTERVAL: '5000' };

const generateWorkflow = webhookGenerateWorkflow({
	id: 'ipxQueueWebhook1',
	name: 'queue: webhook → Generate',
	path: WEBHOOK_PATH,
	webhookId: '0b6c7c1e-5d0e-4d8e-9a51-6a1f3c2b9e10',
});

const triggerWorkflow = {
	id: 'ipxQueueTrigger1',
	name: 'queue: trigger → Get Publication',
	nodes: [
		// Four polls a minute: n8n refuses a cron that fires more than once a minute ("5,20,35,50 * * * * *"
		// is "too short"), but accepts several once-a-minute entries.
		node(TRIGGER, 'n8n-nodes-imagepack.imagePackTrigger', {
			pollTimes: { item: [5, 20, 35, 50].map((second) => ({ mode: 'custom', cronExpression: `${second} * * * * *` })) },
			startFrom: 'beginning',
			// Without the manifest the main's polls never call the route Get Publication uses on the workers.
			includeManifest: false,
		}),
		node('Get Publication', IMAGE_PACK, {
			resource: 'publication',
			operation: 'get',
			publicationId: { __rl: true, mode: 'id', value: '={{ $json.id }}' },
			options: { downloadImages: false },
		}, { position: [220, 0] }),
	],
	connections: { [TRIGGER]: { main: [[{ node: 'Get Publication', type: 'main', index: 0 }]] } },
	settings: { executionOrder: 'v1' },
};

describe('queue mode: n8n 2.41.1 main + 2 workers, PostgreSQL, Redis', { skip: services.ok ? false : services.reason }, () => {
	let emulator;
	let cluster;
	let credential;
	const log = (message) => process.env.E2E_QUIET || process.stderr.write(`[queue] ${message}\n`);
	const seen = {};

	const triggerIds = (execution) => execution.nodeOutput(TRIGGER).map((item) => item.json.id);
	const mainEnqueued = (id) => cluster.main.logs().includes(`Enqueued execution ${id} (`);

	async function settled(workflowId, count, { mode } = {}) {
		return waitFor(
			async () => {
				const executions = (await cluster.executions(workflowId)).filter((e) => !mode || e.mode === mode);
				return executions.length >= count && executions.every((e) => !['new', 'running', 'waiting'].includes(e.status)) && executions;
			},
			{ timeoutMs: 120_000, intervalMs: 500, what: `${count} finished ${mode ?? ''} executions of ${workflowId}` },
		);
	}

	const callWebhook = (prompt) => postToWebhook(cluster.main.url, WEBHOOK_PATH, prompt);

	async function readBinaryFromMain(binary) {
		const answer = await (await cluster.rest()).get(`/rest/binary-data?id=${encodeURIComponent(binary.id)}&action=download`);
		assert.equal(answer.status, 200, `GET /rest/binary-data ${binary.id}`);
		return answer.body;
	}

	async function assertImagesReadableFromMain(execution) {
		const [item] = execution.nodeOutput('Generate');
		const stored = new Map((await emulator.control.images()).map((image) => [image.id, image]));
		assert.equal(item.json.images.length, 2);
		for (const [index, image] of item.json.images.entries()) {
			const binary = item.binary[`image_${index}`];
			const bytes = await readBinaryFromMain(binary);
			assert.equal(sha256(bytes), stored.get(image.id).sha256, `image_${index} read from the main is the emulator's file`);
		}
		return item;
	}

	/** Fetch Test Event as the editor sends it: run the workflow manually up to the trigger node. */
	async function fetchTestEvent() {
		const rest = await cluster.rest();
		const { executionId } = ok(
			await rest.post(`/rest/workflows/${triggerWorkflow.id}/run`, {
				triggerToStartFrom: { name: TRIGGER },
				destinationNode: { nodeName: TRIGGER, mode: 'inclusive' },
			}),
			'Fetch Test Event',
		);
		const execution = await waitFor(
			async () => (await cluster.executions(triggerWorkflow.id)).find((e) => String(e.id) === String(executionId) && e.status !== 'running' && e.status !== 'new'),
			{ timeoutMs: 60_000, what: `manual execution ${executionId}` },
		);
		return execution;
	}

	before(async () => {
		const started = Date.now();
		emulator = await startTestEmulator();
		await emulator.control.setLatency('generate', GENERATE_MS);
		seen.p1 = await emulator.control.publish({ packId: 'pk_before' });
		await ensureN8n();
		const tarball = process.env.IMAGEPACK_TARBALL || (await packPackage());
		cluster = await startQueueCluster({ tarball, concurrency: CONCURRENCY, workerEnv: WORKER_LOCKS });
		credential = await cluster.createCredential(emulatorCredential(emulator));
		await cluster.createWorkflow(withCredential(generateWorkflow, credential), { activate: true });
		await cluster.createWorkflow(withCredential(triggerWorkflow, credential), { activate: true });
		log(`PostgreSQL :${cluster.postgres.port}, Redis :${cluster.redis.port}, main ${cluster.main.url}, ${cluster.workers.length} workers; ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
	});

	after(async () => {
		await cluster?.stop();
		await emulator?.close();
	});

	it('a webhook-started Generate (n = 2, downloads on) runs on a worker; its binaries are read from the main (database mode)', async () => {
		const answer = await callWebhook('A white ceramic mug on an oak table');
		assert.equal(answer.status, 200, JSON.stringify(answer.body));
		assert.equal(answer.body.images.length, 2);
		const [execution] = await settled(generateWorkflow.id, 1);
		assert.equal(execution.mode, 'webhook');
		assert.equal(execution.status, 'success');
		assert.ok(mainEnqueued(execution.id), 'the main put the execution on the queue');
		seen.firstWorker = cluster.workerOf(execution.id);
		assert.ok(seen.firstWorker >= 0, `a worker's log says it ran execution ${execution.id}`);
		assert.ok(!cluster.main.logs().includes(`Worker started execution ${execution.id} (`));
		const item = await assertImagesReadableFromMain(execution);
		assert.ok(item.binary.image_0.id.startsWith('database:'), `binary id ${item.binary.image_0.id}`);
		seen.databaseBinary = item.binary.image_0;
		log(`execution ${execution.id} ran on worker ${seen.firstWorker}; binaries in ${cluster.binaryDataMode} mode`);
	});

	it('20 webhook calls are spread over both workers and all finish', async () => {
		const before = (await cluster.executions(generateWorkflow.id)).length;
		const started = Date.now();
		const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => callWebhook(`Product ${index}`)));
		const wallMs = Date.now() - started;
		assert.deepEqual(answers.map((answer) => answer.status), Array(20).fill(200));
		const executions = (await settled(generateWorkflow.id, before + 20)).slice(before);
		assert.equal(executions.length, 20);
		assert.ok(executions.every((e) => e.status === 'success' && e.mode === 'webhook'));
		const perWorker = cluster.workers.map(() => 0);
		for (const execution of executions) perWorker[cluster.workerOf(execution.id)]++;
		assert.equal(perWorker.reduce((a, b) => a + b, 0), 20, `every execution ran on a worker: ${perWorker}`);
		assert.ok(perWorker.every((count) => count > 0), `both workers ran some: ${perWorker}`);
		const idealMs = Math.ceil(20 / (cluster.workers.length * CONCURRENCY)) * GENERATE_MS;
		log(`20 calls: ${(wallMs / 1000).toFixed(1)} s wall, ideal ${(idealMs / 1000).toFixed(1)} s (ratio ${(wallMs / idealMs).toFixed(2)}; npm run bench measures it), per worker ${perWorker.join(' / ')}`);
	});

	it('the credential test and Fetch Test Event work through the main’s REST API', async () => {
		const rest = await cluster.rest();
		const good = ok(await rest.post('/rest/credentials/test', { credentials: { id: credential.id, name: credential.name, type: 'imagePackApi', data: emulatorCredential(emulator).data } }), 'credential test');
		assert.equal(good.status, 'OK', JSON.stringify(good));
		const wrongKey = { ...emulatorCredential(emulator).data, apiKey: 'sk_wrong_key_0000000000' };
		const bad = ok(await rest.post('/rest/credentials/test', { credentials: { id: credential.id, name: credential.name, type: 'imagePackApi', data: wrongKey } }), 'credential test');
		assert.equal(bad.status, 'Error');
		assert.match(bad.message, /key/i);

		const cursorBefore = await cluster.staticData(triggerWorkflow.id);
		const execution = await fetchTestEvent();
		assert.equal(execution.mode, 'manual');
		assert.equal(execution.status, 'success', JSON.stringify(execution.run?.resultData?.error));
		assert.deepEqual(triggerIds(execution), [seen.p1.id], 'the newest publication');
		assert.equal(cluster.workerOf(execution.id), -1, 'manual executions run on the main by default in 2.41');
		assert.deepEqual(await cluster.staticData(triggerWorkflow.id), cursorBefore, 'Fetch Test Event leaves the cursor alone');
	});

	it('the trigger polls on the main, its executions run on workers, a late-committed publication once', async () => {
		const [first] = await settled(triggerWorkflow.id, 1, { mode: 'trigger' });
		assert.deepEqual(triggerIds(first), [seen.p1.id], 'the activation poll emitted the existing publication');
		assert.equal(first.status, 'success');
		assert.ok(mainEnqueued(first.id) && cluster.workerOf(first.id) >= 0, 'enqueued by the main, run by a worker');
		assert.equal(first.nodeOutput('Get Publication')[0].json.pack_id, 'pk_before');
		const state = (await cluster.staticData(triggerWorkflow.id))[`node:${TRIGGER}`];
		assert.ok(state, 'the trigger’s cursor is in PostgreSQL (workflow_entity.staticData)');

		seen.late = await emulator.control.publish({ packId: 'pk_late', commit: false });
		seen.p2 = await emulator.control.publish({ packId: 'pk_shoes' });
		seen.p3 = await emulator.control.publish({ packId: 'pk_bags' });
		const [, second] = await settled(triggerWorkflow.id, 2, { mode: 'trigger' });
		assert.deepEqual(triggerIds(second), [seen.p2.id, seen.p3.id]);
		assert.ok(cluster.workerOf(second.id) >= 0);

		await emulator.control.commitPublication(seen.late.id);
		const [, , third] = await settled(triggerWorkflow.id, 3, { mode: 'trigger' });
		assert.deepEqual(triggerIds(third), [seen.late.id], 'the late-committed publication, once');
		assert.ok(cluster.workerOf(third.id) >= 0);
	});

	it('a worker killed mid-execution: its execution stays "running", nothing else picks it up yet', async () => {
		// Get Publication (on the worker) hangs until the worker is killed.
		await emulator.control.setLatency('getPublication', 300_000);
		const before = (await emulator.control.requests({ route: 'getPublication' })).length;
		seen.p4 = await emulator.control.publish({ packId: 'pk_crash' });
		await waitFor(async () => (await emulator.control.requests({ route: 'getPublication' })).length > before, {
			timeoutMs: 60_000,
			what: 'the execution of the next poll to reach Get Publication',
		});
		const running = (await cluster.executions(triggerWorkflow.id)).find((e) => e.status === 'running');
		assert.ok(running, 'an execution is running');
		seen.crashed = running.id;
		const victim = await waitFor(() => (cluster.workerOf(running.id) >= 0 ? { index: cluster.workerOf(running.id) } : null), { what: 'the worker running it' });
		seen.victim = victim.index;
		log(`killing worker ${victim.index} (SIGKILL) while it runs execution ${running.id}`);
		await cluster.workers[victim.index].kill();
		await emulator.control.setLatency('getPublication', 0);
		// n8n does not hand the job to the other worker (its Bull queue allows 0 stalls): the job fails once its
		// lock expires, and the execution stays "running" in the database until a crash recovery runs.
		await new Promise((resolve) => setTimeout(resolve, 2000));
		const [row] = await cluster.postgres.query('SELECT status FROM execution_entity WHERE id = $1', [running.id]);
		assert.equal(row.status, 'running');
	});

	it('main and workers restart (binary data now filesystem in a shared folder): the crash is recovered, the user retries, nothing is emitted twice', async () => {
		const cursor = await cluster.staticData(triggerWorkflow.id);
		await cluster.main.stop();
		assert.deepEqual(await cluster.staticData(triggerWorkflow.id), cursor, 'the cursor in PostgreSQL survives the stop');
		seen.p5 = await emulator.control.publish({ packId: 'pk_while_down' });
		await Promise.all(cluster.workers.map((worker) => worker.stop()));
		cluster.setBinaryDataMode('filesystem');
		await Promise.all([
			cluster.startMain({ OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS: 'true' }),
			...cluster.workers.map((_, index) => cluster.startWorker(index)),
		]);

		// Marked crashed by a recovery: here the killed worker's own, when it starts again with its user folder
		// (its event log lists the unfinished execution); else the main's queue recovery, at its start and every
		// N8N_EXECUTIONS_QUEUE_RECOVERY_INTERVAL minutes (180 by default), once the queue job has failed.
		await waitFor(async () => (await cluster.postgres.query('SELECT status FROM execution_entity WHERE id = $1', [seen.crashed]))[0].status === 'crashed', {
			timeoutMs: 60_000,
			what: `execution ${seen.crashed} marked crashed`,
		});
		const emitted = await waitFor(
			async () => {
				const executions = await settled(triggerWorkflow.id, 5, { mode: 'trigger' });
				return executions.some((e) => triggerIds(e).includes(seen.p5.id)) && executions;
			},
			{ timeoutMs: 90_000, what: 'the publication made while the main was down' },
		);
		assert.deepEqual(triggerIds(emitted.at(-1)), [seen.p5.id], 'the activation poll after the restart emits what is new, only');
		assert.ok(cluster.workerOf(emitted.at(-1).id) >= 0);

		// What the user does: retry the crashed execution (Executions → Retry); it runs on a worker.
		const rest = await cluster.rest();
		const retry = await rest.post(`/rest/executions/${seen.crashed}/retry`, { loadWorkflow: false });
		assert.equal(retry.status, 200, JSON.stringify(retry.body));
		const [retried] = await waitFor(
			async () => {
				const found = (await cluster.executions(triggerWorkflow.id)).filter((e) => String(e.retryOf) === String(seen.crashed) && e.status !== 'running' && e.status !== 'new');
				return found.length ? found : null;
			},
			{ timeoutMs: 60_000, what: 'the retry' },
		);
		assert.equal(retried.status, 'success');
		const other = 1 - seen.victim;
		assert.ok(!cluster.workerLogs(other).includes(`Worker started execution ${seen.crashed} (`), 'n8n never handed the killed job to the other worker');
		assert.equal(retried.mode, 'retry');
		assert.equal(retried.nodeOutput('Get Publication')[0].json.id, seen.p4.id);
		assert.ok(cluster.workerOf(retried.id) >= 0, 'the retry ran on a worker');

		// A moment for a wrong extra emission to show up, then the tally: each publication emitted exactly once.
		await new Promise((resolve) => setTimeout(resolve, 3000));
		// (The crashed execution's run data is what n8n's recovery rebuilt from the worker's event log:
		// placeholder items; the publication it carried is the one its retry processed, P4.)
		const triggered = (await cluster.executions(triggerWorkflow.id)).filter((e) => e.mode === 'trigger');
		assert.deepEqual(triggered.map((e) => e.status), ['success', 'success', 'success', 'crashed', 'success']);
		assert.deepEqual(
			triggered.filter((e) => e.status !== 'crashed').flatMap(triggerIds),
			[seen.p1.id, seen.p2.id, seen.p3.id, seen.late.id, seen.p5.id],
		);
	});

	it('after the switch to filesystem mode: new binaries in the shared folder and old database ones are both read from the main', async () => {
		const before = (await cluster.executions(generateWorkflow.id)).length;
		const answer = await callWebhook('A canvas tote bag');
		assert.equal(answer.status, 200);
		const executions = await settled(generateWorkflow.id, before + 1);
		const execution = executions.at(-1);
		assert.ok(cluster.workerOf(execution.id) >= 0);
		const item = await assertImagesReadableFromMain(execution);
		assert.ok(item.binary.image_0.id.startsWith('filesystem'), `binary id ${item.binary.image_0.id}`);
		assert.ok((await readBinaryFromMain(seen.databaseBinary)).length > 0, 'a binary stored in database mode is still readable');
	});

	it('Fetch Test Event with manual executions offloaded to workers (n8n 3.x’s only behaviour) leaves the poll lease and cursor alone', async () => {
		const cursor = await cluster.staticData(triggerWorkflow.id);
		const execution = await fetchTestEvent();
		assert.equal(execution.status, 'success', JSON.stringify(execution.run?.resultData?.error));
		assert.ok(cluster.workerOf(execution.id) >= 0, 'the manual execution ran on a worker');
		assert.deepEqual(triggerIds(execution), [seen.p5.id]);
		assert.deepEqual(await cluster.staticData(triggerWorkflow.id), cursor);
		// The main keeps polling on schedule (its lease is its own, per process): a new publication still arrives once.
		seen.p6 = await emulator.control.publish({ packId: 'pk_after' });
		const triggered = await waitFor(
			async () => {
				const executions = await settled(triggerWorkflow.id, 1, { mode: 'trigger' });
				return executions.some((e) => triggerIds(e).includes(seen.p6.id)) && executions;
			},
			{ timeoutMs: 90_000, what: 'the next publication' },
		);
		assert.equal(triggered.flatMap(triggerIds).filter((id) => id === seen.p6.id).length, 1);
	});
});
