/**
 * The MCP example in queue mode: n8n 2.41.1 main + one worker (PostgreSQL, Redis; queue.mjs), the
 * official MCP client on the main. A tool call runs on the worker after the trigger's execution and its
 * answer comes back through Redis; a thrown error arrives as `{"error":{"message","name"}}` (n8n drops the
 * description), so the whole text must be in the message. One worker keeps it deterministic: with
 * several, a repeat may reach another worker, which refuses an unknown handle without sending (the stated
 * limit; the same refusal is checked here with a handle nobody holds).
 *
 * `npm run test:e2e -- --test-name-pattern='MCP Server Trigger in queue mode'`; skipped without PostgreSQL
 * and redis-server (installed with apt-get when missing and running as root).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { emulatorCredential, startTestEmulator, waitFor } from './fixtures.mjs';
import { BEARER, GENERATE_TOOL, callTool, generateArgs, mcpClient, mcpWorkflow } from './mcp-client.mjs';
import { ensureN8n, packPackage } from './n8n.mjs';
import { startQueueCluster } from './queue.mjs';
import { ensureQueueServices } from './services.mjs';

const services = ensureQueueServices();
const WORKFLOW = { id: 'e2eMcpQueue00001', path: 'imagepack-queue' };

describe('MCP Server Trigger in queue mode (n8n 2.41.1, main + 1 worker)', { skip: services.ok ? false : services.reason }, () => {
	let emulator;
	let cluster;
	let url;
	const generations = async () => await emulator.control.requests({ route: 'generate' });

	before(async () => {
		await ensureN8n();
		emulator = await startTestEmulator();
		cluster = await startQueueCluster({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()), workers: 1 });
		const credential = await cluster.createCredential(emulatorCredential(emulator));
		const bearer = await cluster.createCredential(BEARER);
		await cluster.createWorkflow(mcpWorkflow(credential, { ...WORKFLOW, bearer }), { activate: true });
		url = `${cluster.main.url}/mcp/${WORKFLOW.path}`;
		await waitFor(async () => (await fetch(url, { method: 'POST' })).status !== 404, { timeoutMs: 60_000, what: 'the MCP endpoint' });
	});

	after(async () => {
		await cluster?.stop();
		await emulator?.close();
	});

	it('a refused call is flagged isError, and the message alone says the code, the charge and the request id', async () => {
		await emulator.control.reset();
		await emulator.control.setCredits(emulator.accountId, 5);
		const client = await mcpClient(url);
		try {
			const refused = await callTool(client, GENERATE_TOOL, generateArgs('MCP queue expensive vase'));
			assert.equal(refused.isError, true, refused.text);
			assert.equal(refused.json.error.name, 'NodeOperationError');
			const [request] = await generations();
			assert.match(refused.json.error.message, /^Image generation failed: .+ Error code: insufficient_credits, HTTP 402\. The service refused or refunded the request: no credits were charged\. Request id: req_/);
			assert.ok(refused.json.error.message.includes(request.requestId));
		} finally {
			await client.close();
		}
	});

	it('a 75 s generation on the worker: "running" before 60 s, collected by a new session with the handle, charged once; an unknown handle sends nothing', async () => {
		await emulator.control.reset();
		await emulator.control.setLatency('generate', 75_000);
		const args = generateArgs('MCP queue slow vase');
		const first = await mcpClient(url);
		const running = await callTool(first, GENERATE_TOOL, args).finally(() => first.close());
		assert.equal(running.isError, false, running.text);
		assert.ok(running.ms < 60_000, `answered after ${running.ms} ms`);
		const [answer] = running.json;
		assert.equal(answer.status, 'running');

		const second = await mcpClient(url);
		try {
			const collected = await callTool(second, GENERATE_TOOL, { ...args, handle: answer.handle });
			assert.equal(collected.isError, false, collected.text);
			assert.equal(collected.json[0].credits_charged, 12);
			assert.equal((await generations()).length, 1, 'one request');

			const stranger = await callTool(second, GENERATE_TOOL, generateArgs('MCP queue never sent', { handle: 'gen_ffffffffffffffffff' }));
			assert.equal(stranger.isError, true, stranger.text);
			assert.match(stranger.json.error.message, /unknown_handle\. Nothing was sent and no credits were used\./);
			assert.equal((await generations()).length, 1, 'an unknown handle never sends');
		} finally {
			await second.close();
		}
	});
});
