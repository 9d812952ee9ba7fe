/**
 * The Image Pack tools behind n8n's MCP Server Trigger in a running n8n 2.41.1 (regular mode), called
 * by the official MCP TypeScript SDK client over Streamable HTTP with its defaults (60 s a request),
 * against the emulator. The shipped example (examples/mcp-server.json: Bearer auth, Generate with
 * Answer Within 45 s and the caps, Get Publication) and two variants: Generate with Retry On Fail, and
 * with a small Max Credits per Hour. Requests and charges are counted at the emulator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { emulatorCredential, startTestEmulator, waitFor } from './fixtures.mjs';
import { BEARER, GENERATE_TOOL, LOOKUP_TOOL, callTool, generateArgs, mcpClient, mcpWorkflow } from './mcp-client.mjs';
import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, startN8n } from './n8n.mjs';

const WORKFLOWS = {
	example: { id: 'e2eMcpExample001', path: 'imagepack' },
	retry: { id: 'e2eMcpRetry00001', path: 'imagepack-retry', generateSettings: { retryOnFail: true, maxTries: 3, waitBetweenTries: 10 } },
	cap: { id: 'e2eMcpCapped0001', path: 'imagepack-capped', options: { maxCreditsPerHour: 36 } },
};

describe('MCP Server Trigger in n8n 2.41.1 (official MCP client, emulator)', () => {
	let emulator;
	let userFolder;
	let n8n;
	const url = (name) => `${n8n.url}/mcp/${WORKFLOWS[name].path}`;
	const generations = async () => await emulator.control.requests({ route: 'generate' });

	before(async () => {
		emulator = await startTestEmulator();
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		const credential = emulatorCredential(emulator);
		await importCredential(userFolder.dir, [credential, BEARER]);
		await importWorkflow(userFolder.dir, Object.values(WORKFLOWS).map((w) => mcpWorkflow(credential, w)));
		for (const { id } of Object.values(WORKFLOWS)) await publishWorkflow(userFolder.dir, id);
		n8n = await startN8n({ userFolder: userFolder.dir, echo: !!process.env.E2E_ECHO });
		for (const name of Object.keys(WORKFLOWS)) {
			await waitFor(async () => (await fetch(url(name), { method: 'POST' })).status !== 404, { timeoutMs: 60_000, what: `the MCP endpoint ${name}` });
		}
	});

	after(async () => {
		await n8n?.stop();
		userFolder?.cleanup();
		await emulator?.close();
	});

	it('lists both tools with their $fromAI arguments (the handle optional); no token, no session', async () => {
		const refused = await fetch(url('example'), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
		assert.ok([401, 403].includes(refused.status), `Bearer auth: never open (${refused.status})`);
		const client = await mcpClient(url('example'));
		try {
			const { tools } = await client.listTools();
			const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
			assert.deepEqual(Object.keys(byName).sort(), [GENERATE_TOOL, LOOKUP_TOOL]);
			const schema = byName[GENERATE_TOOL].inputSchema;
			assert.deepEqual(Object.keys(schema.properties).sort(), ['handle', 'prompt', 'ratio', 'referenceImageIds', 'sessionId']);
			assert.deepEqual([...schema.required].sort(), ['prompt', 'ratio', 'referenceImageIds', 'sessionId'], 'handle has a default: optional');
			assert.match(byName[GENERATE_TOOL].description, /Generates e-commerce product images/);
		} finally {
			await client.close();
		}
	});

	it('a call: one generation, the images with their links, not flagged as an error', async () => {
		await emulator.control.reset();
		const client = await mcpClient(url('example'));
		try {
			const call = await callTool(client, GENERATE_TOOL, generateArgs('MCP quick vase'));
			assert.equal(call.isError, false, call.text);
			const [result] = call.json;
			assert.equal(result.credits_charged, 12);
			assert.match(result.images[0].id, /^img_/);
			assert.ok(result.image_links[0].url.startsWith(emulator.fileBaseUrl));
			assert.equal((await generations()).length, 1);
		} finally {
			await client.close();
		}
	});

	it('a refused call is flagged isError, with the code, the charge outcome and the request id in the text', async () => {
		await emulator.control.reset();
		await emulator.control.setCredits(emulator.accountId, 5);
		const client = await mcpClient(url('example'));
		try {
			const refused = await callTool(client, GENERATE_TOOL, generateArgs('MCP too expensive vase'));
			assert.equal(refused.isError, true, refused.text);
			assert.match(refused.text, /^NodeOperationError: Image generation failed: .+ Error code: insufficient_credits, HTTP 402\. The service refused or refunded the request: no credits were charged\. Request id: req_[0-9a-f]+\./);
			const [request] = await generations();
			assert.ok(refused.text.includes(request.requestId));

			const missing = await callTool(client, LOOKUP_TOOL, { publicationId: 999_999 });
			assert.equal(missing.isError, true, missing.text);
			assert.match(missing.text, /Reading the publication failed: .+ Error code: not_found, HTTP 404\. This operation never costs credits\./);
		} finally {
			await client.close();
		}
	});

	it('two clients asking the same at the same time share one generation', async () => {
		await emulator.control.reset();
		await emulator.control.setLatency('generate', 3_000);
		const [a, b] = await Promise.all([mcpClient(url('example')), mcpClient(url('example'))]);
		try {
			const args = generateArgs('MCP twin vase');
			const [first, second] = await Promise.all([callTool(a, GENERATE_TOOL, args), callTool(b, GENERATE_TOOL, args)]);
			assert.equal(first.json[0].turn_id, second.json[0].turn_id);
			assert.equal((await generations()).length, 1);
		} finally {
			await Promise.all([a.close(), b.close()]);
		}
	});

	it('a 75 s generation: answered "running" before the client\'s 60 s, collected by a new session, charged once', async () => {
		await emulator.control.reset();
		await emulator.control.setLatency('generate', 75_000);
		const args = generateArgs('MCP slow vase');
		const first = await mcpClient(url('example'));
		let running;
		try {
			running = await callTool(first, GENERATE_TOOL, args);
		} finally {
			await first.close();
		}
		assert.equal(running.isError, false, running.text);
		assert.ok(running.ms < 60_000, `answered after ${running.ms} ms`);
		const [answer] = running.json;
		assert.equal(answer.status, 'running');
		assert.match(answer.handle, /^gen_[0-9a-f]{18}$/);
		assert.match(answer.message, new RegExp(`call this tool again with the same arguments and handle "${answer.handle}"`));

		const second = await mcpClient(url('example'));
		try {
			const unknown = await callTool(second, GENERATE_TOOL, generateArgs('MCP other vase', { handle: 'gen_000000000000000000' }));
			assert.equal(unknown.isError, true, unknown.text);
			assert.match(unknown.text, /Error code: unknown_handle\. Nothing was sent and no credits were used\./);

			const collected = await callTool(second, GENERATE_TOOL, { ...args, handle: answer.handle });
			assert.equal(collected.isError, false, collected.text);
			assert.ok(collected.ms < 60_000, `collected after ${collected.ms} ms`);
			assert.equal(collected.json[0].credits_charged, 12);
			const log = await generations();
			assert.equal(log.length, 1, 'one request for the two calls; the unknown handle sent nothing');
			const ledger = await emulator.control.ledger();
			assert.equal(ledger.entries.filter((entry) => entry.type === 'charge').length, 1, 'charged once');

			// Collected: the same arguments are a new generation.
			await emulator.control.setLatency('generate', 0);
			const again = await callTool(second, GENERATE_TOOL, args);
			assert.notEqual(again.json[0].turn_id, collected.json[0].turn_id);
			assert.equal((await generations()).length, 2);
		} finally {
			await second.close();
		}
	});

	it('Retry On Fail: a refunded failure is tried again, a may-have-been-charged one is sent once, and a repeat is not sent', async () => {
		await emulator.control.reset();
		const client = await mcpClient(url('retry'));
		try {
			await emulator.control.injectFault({ route: 'generate', kind: 'status', status: 500 });
			const retried = await callTool(client, GENERATE_TOOL, generateArgs('MCP refunded vase'));
			assert.equal(retried.isError, false, retried.text);
			assert.equal((await generations()).length, 2, "n8n's tool retry sent the refunded generation again");

			await emulator.control.reset();
			await emulator.control.injectFault({ route: 'generate', kind: 'reset', when: 'after' });
			const lost = await callTool(client, GENERATE_TOOL, generateArgs('MCP lost vase'));
			assert.equal(lost.isError, true, lost.text);
			assert.match(lost.text, /Error code: network_error\. The generation may have run and may have been charged: do not call again automatically\./);
			assert.equal((await generations()).length, 1, 'three tries, one request');
			const repeat = await callTool(client, GENERATE_TOOL, generateArgs('MCP lost vase'));
			assert.equal(repeat.text, lost.text);
			assert.equal((await generations()).length, 1, 'a repeat within the window answers the same failure');
		} finally {
			await client.close();
		}
	});

	it('Max Credits per Hour (36) stops a burst of five calls after three, across calls and sessions', async () => {
		await emulator.control.reset();
		const clients = await Promise.all([0, 1, 2, 3, 4].map(() => mcpClient(url('cap'))));
		try {
			const calls = await Promise.all(clients.map((client, i) => callTool(client, GENERATE_TOOL, generateArgs(`MCP burst vase ${i}`))));
			const refused = calls.filter((call) => call.isError);
			assert.equal(calls.length - refused.length, 3);
			assert.equal(refused.length, 2);
			for (const call of refused) {
				assert.match(call.text, /The hourly credit cap of this node is reached: 36 of 36 credits \(Max Credits per Hour\).+Error code: credit_cap_reached\. Nothing was sent and no credits were used\./);
			}
			assert.equal((await generations()).length, 3);
			const later = await mcpClient(url('cap'));
			const next = await callTool(later, GENERATE_TOOL, generateArgs('MCP later vase'));
			await later.close();
			assert.equal(next.isError, true, 'the hour holds for a new session too');
		} finally {
			await Promise.all(clients.map((client) => client.close()));
		}
	});
});
