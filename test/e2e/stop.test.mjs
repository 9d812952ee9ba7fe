/**
 * Stop stops, in a running n8n 2.41.1: a webhook starts Generate for three prompts while the emulator
 * holds the first generation (120 s latency); the execution is stopped through n8n's REST API. The
 * generate request's connection is closed by n8n (seen by a TCP relay in front of the emulator, which
 * keeps holding), the execution ends as canceled, and no further request reaches the API.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';

import { emulatorCredential, startTestEmulator, waitFor } from './fixtures.mjs';
import {
	createUserFolder,
	importCredential,
	importWorkflow,
	ownerEnv,
	packPackage,
	publishWorkflow,
	restSession,
	startN8n,
} from './n8n.mjs';

const WORKFLOW = 'e2eStopGenerate1';
const OWNER = { email: 'owner@example.com', password: 'Stop-Test-Password-1' };
const HOLD_MS = 120_000;

/** A TCP relay to the emulator that records each connection's first bytes and when it closed. */
function startRelay(targetPort) {
	const connections = [];
	const server = net.createServer((client) => {
		const record = { head: '', closedByClient: false, closed: false };
		connections.push(record);
		const upstream = net.connect(targetPort, '127.0.0.1');
		client.on('data', (chunk) => {
			if (record.head.length < 200) record.head += chunk.toString('latin1');
		});
		client.on('end', () => (record.closedByClient = true));
		client.on('close', () => {
			record.closed = true;
			upstream.destroy();
		});
		upstream.on('close', () => client.destroy());
		client.on('error', () => undefined);
		upstream.on('error', () => undefined);
		client.pipe(upstream);
		upstream.pipe(client);
	});
	return new Promise((resolve) => {
		server.listen(0, '127.0.0.1', () =>
			resolve({
				url: `http://127.0.0.1:${server.address().port}`,
				connections,
				close: () => new Promise((done) => server.close(() => done())),
			}),
		);
	});
}

describe('Stop in a running n8n 2.41.1', () => {
	let emulator;
	let relay;
	let userFolder;
	let n8n;
	let session;

	const rest = async (method, route, body) => {
		const answer = await session.request(method, `/rest${route}`, body);
		assert.ok(answer.status < 300, `${method} ${route}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
		return answer.body.data;
	};

	before(async () => {
		emulator = await startTestEmulator();
		await emulator.control.setLatency('generate', HOLD_MS);
		relay = await startRelay(Number(new URL(emulator.baseUrl).port));
		const tarball = process.env.IMAGEPACK_TARBALL ?? (await packPackage());
		userFolder = await createUserFolder({ tarball });
		const credential = { ...emulatorCredential(emulator), data: { baseUrl: relay.url, apiKey: emulator.apiKey } };
		await importCredential(userFolder.dir, credential);
		const nodes = [
			{
				id: 'hook',
				name: 'Webhook',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2,
				position: [0, 0],
				webhookId: '5b0e6a3c-4e0f-4a39-9f6a-0c7d2e1f3a11',
				parameters: { httpMethod: 'POST', path: 'imagepack-stop', responseMode: 'onReceived', options: {} },
			},
			{
				id: 'split',
				name: 'Split Out',
				type: 'n8n-nodes-base.splitOut',
				typeVersion: 1,
				position: [220, 0],
				parameters: { fieldToSplitOut: 'body.prompts', options: {} },
			},
			{
				id: 'generate',
				name: 'Generate',
				type: 'n8n-nodes-imagepack.imagePack',
				typeVersion: 1,
				position: [440, 0],
				parameters: {
					resource: 'image',
					operation: 'generate',
					prompt: '={{ $json.prompt }}',
					model: 'nano-banana-2',
					options: { downloadImages: false },
				},
				credentials: { imagePackApi: { id: credential.id, name: credential.name } },
			},
		];
		const connect = (from, to) => ({ [from]: { main: [[{ node: to, type: 'main', index: 0 }]] } });
		await importWorkflow(userFolder.dir, {
			id: WORKFLOW,
			name: 'e2e: stop a held generate',
			nodes,
			connections: { ...connect('Webhook', 'Split Out'), ...connect('Split Out', 'Generate') },
			settings: { executionOrder: 'v1', saveManualExecutions: true },
		});
		await publishWorkflow(userFolder.dir, WORKFLOW);
		n8n = await startN8n({
			userFolder: userFolder.dir,
			echo: !!process.env.E2E_ECHO,
			env: { N8N_SECURE_COOKIE: 'false', ...ownerEnv({ ...OWNER, firstName: 'Stop', lastName: 'Test' }) },
		});
		session = await restSession(n8n.url, OWNER);
	});

	after(async () => {
		await n8n?.stop();
		await relay?.close();
		await emulator?.close();
		userFolder?.cleanup();
	});

	it('aborts the held generate request, starts no further item, and the execution ends', async () => {
		// n8n registers the published workflow's webhook shortly after it reports ready.
		const hook = await waitFor(
			async () => {
				const response = await fetch(`${n8n.url}/webhook/imagepack-stop`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({
						prompts: [{ prompt: 'a red shoe' }, { prompt: 'a blue shoe' }, { prompt: 'a green shoe' }],
					}),
				});
				return response.status !== 404 && response;
			},
			{ timeoutMs: 60_000, intervalMs: 1000, what: 'the webhook to be registered' },
		);
		assert.equal(hook.status, 200, await hook.text());

		// The emulator now holds the first generation.
		await waitFor(async () => (await emulator.control.requests({ route: 'generate' })).length === 1, {
			timeoutMs: 60_000,
			what: 'the first generate request',
		});
		const generateConnection = () => relay.connections.find((c) => c.head.startsWith('POST /api/v1/generate'));
		assert.ok(generateConnection(), 'the generate request went through the relay');
		assert.equal(generateConnection().closed, false, 'the connection is open while the emulator holds it');

		const running = await waitFor(
			async () => {
				const list = await rest('GET', `/executions?filter=${encodeURIComponent(JSON.stringify({ workflowId: WORKFLOW }))}`);
				return (list.results ?? list).find((execution) => execution.status === 'running');
			},
			{ timeoutMs: 30_000, what: 'the running execution' },
		);
		await rest('POST', `/executions/${running.id}/stop`);

		// n8n closed the request: the relay saw the client side go, long before the emulator would answer.
		await waitFor(() => generateConnection().closed, { timeoutMs: 30_000, what: 'the generate connection to close' });
		assert.equal(generateConnection().closedByClient || generateConnection().closed, true);

		// Nothing hangs: the execution reaches a final state.
		const finished = await waitFor(
			async () => {
				const execution = await rest('GET', `/executions/${running.id}`);
				return ['canceled', 'error', 'crashed', 'success'].includes(execution.status) && execution;
			},
			{ timeoutMs: 60_000, what: 'the stopped execution to finish' },
		);
		assert.equal(finished.status, 'canceled');

		// Nothing else was sent: one generate, no second or third item.
		const generates = await emulator.control.requests({ route: 'generate' });
		assert.equal(generates.length, 1);
		assert.equal(relay.connections.filter((c) => c.head.startsWith('POST ')).length, 1);
	});
});
