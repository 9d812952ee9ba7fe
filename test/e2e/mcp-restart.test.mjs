/**
 * The Generate tool behind n8n's MCP Server Trigger across an n8n restart, in a running n8n 2.41.1
 * (regular mode), called by the official MCP TypeScript SDK client (its defaults) against the emulator.
 *
 * A call answered "running" (the emulator holds the generation: `hold` fault, `when: 'after'`, so it
 * ran and was charged and its answer never leaves) leaves its generation in the n8n process's memory
 * (held.ts) and its send in n8n's deduplication store (durable.ts `toolValues`). n8n is SIGKILLed while
 * the client collects it and restarted on the same user folder and port. From a new session the handle
 * is `unknown_handle` and the same call `interrupted_send` ("may have been charged"), neither sent: one
 * generate request in all. A collected answer clears the record: the same call after a restart, or
 * again right after, generates again.
 *
 * What n8n does with the call it is killed in: its answer is an event stream without event ids, so the
 * SDK sees the stream end ("SSE stream disconnected") but cannot resume it and leaves the call pending
 * until its own request timeout (-32001; 60 s by default, 30 s here); n8n saves a tool call's execution only after the call
 * answered, so that call leaves no execution (nothing crashed, nothing to retry); the restarted n8n
 * answers the old session 404 "Session not found".
 *
 * The workflow is the shipped MCP example with Answer Within 8 s instead of 45 s (the bound only
 * decides when "running" is answered), set up over the REST API as the editor does (no n8n CLI
 * start). About a minute, two on a busy machine: two n8n starts make most of it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { crashableN8n } from './crash-kit.mjs';
import { emulatorCredential, startTestEmulator, waitFor } from './fixtures.mjs';
import { BEARER, GENERATE_TOOL, callTool, generateArgs, mcpClient, mcpWorkflow } from './mcp-client.mjs';
import { createUserFolder, freePort, packPackage, startN8n } from './n8n.mjs';

const BOUND_S = 8;
const INFLIGHT_TIMEOUT_MS = 30_000;
const WORKFLOW = { id: 'e2eMcpRestart001', path: 'imagepack-restart', options: { answerWithinSeconds: BOUND_S } };
const OWNER = { email: 'owner@example.com', password: 'Mcp-Restart-Password-1' };
/** The generation running when n8n is killed (the emulator holds it), one collected before, one after. */
const HELD = 'MCP restart held vase';
const COLLECTED = 'MCP restart collected vase';
const CONTROL = 'MCP restart control vase';

/**
 * A fetch for the MCP transport that counts the answers (response headers) to `tools/call` POSTs:
 * n8n answers a tool call with an event stream whose headers come at once, before the tool's result.
 */
function watchedFetch() {
	const watch = { toolCallAnswers: 0 };
	watch.fetch = async (input, init) => {
		const response = await fetch(input, init);
		if (init?.method === 'POST' && String(init.body ?? '').includes('"tools/call"')) watch.toolCallAnswers++;
		return response;
	};
	return watch;
}

describe('MCP Server Trigger across an n8n restart (2.41.1, regular mode, official MCP client, emulator)', () => {
	let emulator;
	let userFolder;
	let n8n; // crash-kit's crashableN8n: start, kill, start again on the same folder
	let workflowId;
	let first; // the session before the kill
	let watch;
	const transportErrors = [];
	let running; // the "running" answer of HELD
	const inflight = { settled: false }; // the collecting call n8n is killed in
	const args = (prompt, extra) => generateArgs(prompt, extra);
	const url = () => `${n8n.n8n.url}/mcp/${WORKFLOW.path}`;
	const requestsFor = async (prompt) => (await emulator.control.requests({ route: 'generate' })).filter((e) => e.prompt === prompt);
	const endpointReady = () =>
		waitFor(async () => (await fetch(url(), { method: 'POST' })).status !== 404, { timeoutMs: 60_000, intervalMs: 250, what: 'the MCP endpoint' });

	before(async () => {
		emulator = await startTestEmulator();
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		// The same port after the restart: the session made before the kill asks the restarted n8n.
		const port = await freePort();
		n8n = crashableN8n({ userFolder: userFolder.dir, profile: 'default', owner: OWNER, startN8n: (options) => startN8n({ ...options, port }) });
		await n8n.start();
		const { apiKey, baseUrl } = emulatorCredential(emulator).data;
		const credential = await n8n.createCredential({ name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl, apiKey } });
		const bearer = await n8n.createCredential(BEARER);
		workflowId = await n8n.publish(mcpWorkflow(credential, { ...WORKFLOW, bearer }));
		await endpointReady();
	});

	after(async () => {
		await first?.close().catch(() => {});
		await n8n?.stop();
		userFolder?.cleanup();
		await emulator?.close();
	});

	it('before the kill: one call collected with its images; one whose generation the service holds answers "running" with a handle', async () => {
		await emulator.control.reset();
		watch = watchedFetch();
		first = await mcpClient(url(), { fetch: watch.fetch });
		first.onerror = (error) => transportErrors.push({ at: Date.now(), message: String(error?.message ?? error) });

		const collected = await callTool(first, GENERATE_TOOL, args(COLLECTED));
		assert.equal(collected.isError, false, collected.text);
		assert.match(collected.json[0].images[0].id, /^img_/);

		await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after', promptIncludes: HELD });
		running = await callTool(first, GENERATE_TOOL, args(HELD));
		assert.equal(running.isError, false, running.text);
		const [answer] = running.json;
		assert.equal(answer.status, 'running', running.text);
		assert.match(answer.handle, /^gen_[0-9a-f]{18}$/);
		assert.ok(running.ms >= BOUND_S * 1000 - 500 && running.ms < 60_000, `answered after ${running.ms} ms`);

		const [held] = await emulator.control.held();
		assert.equal(held?.prompt, HELD, 'the service holds the answer of the generation');
		const [turn] = (await emulator.control.turns()).filter((t) => t.prompt === HELD);
		assert.equal(turn?.charged, 12, 'the held generation ran and was charged');
		// n8n answers a tool call before it saves the call's execution: wait for both saves, so that the
		// kill below lands in the collecting call, not in the save of this one (a loaded machine saw it).
		await n8n.finished(workflowId, (list) => list.filter((e) => e.mode === 'webhook' && e.status === 'success')[1], 'the second answered call');
	});

	it('killed while the client collects with the handle; restarted on the same folder and port', async (t) => {
		const started = Date.now();
		// The SDK's request timeout is 60 s by default; 30 s here keeps the file short (what ends the call is
		// the timeout, not the end of its stream).
		inflight.promise = first
			.callTool({ name: GENERATE_TOOL, arguments: args(HELD, { handle: running.json[0].handle }) }, undefined, { timeout: INFLIGHT_TIMEOUT_MS })
			.then(
				(result) => Object.assign(inflight, { settled: true, ms: Date.now() - started, result }),
				(error) => Object.assign(inflight, { settled: true, ms: Date.now() - started, error }),
			);
		// n8n has the call (its event stream is open) and waits for the held generation.
		await waitFor(() => watch.toolCallAnswers >= 3, { timeoutMs: BOUND_S * 1000 - 1000, intervalMs: 50, what: 'n8n to take the collecting call' });
		assert.equal(inflight.settled, false);
		const killedAt = Date.now();
		await n8n.kill();

		// The emulator sees n8n's connection go; the MCP client sees its event stream end.
		await waitFor(async () => (await requestsFor(HELD))[0]?.held?.outcome === 'clientClosed', { timeoutMs: 10_000, intervalMs: 100, what: "n8n's held request to close" });
		await waitFor(() => transportErrors.length > 0 || inflight.settled, { timeoutMs: 10_000, intervalMs: 50, what: 'the client to notice' });
		t.diagnostic(
			`after the kill: transport errors ${JSON.stringify(transportErrors.map((e) => `${e.at - killedAt} ms: ${e.message}`))}; the call ${inflight.settled ? `settled after ${inflight.ms} ms` : 'still pending'}`,
		);
		assert.match(transportErrors[0]?.message ?? '', /SSE stream disconnected/);
		assert.equal(inflight.settled, false, 'the SDK does not fail the call whose stream ended');

		const restartedAt = Date.now();
		await n8n.start();
		await endpointReady();
		t.diagnostic(`n8n restarted and its MCP endpoint registered in ${Date.now() - restartedAt} ms`);
		// Regular mode: the two answered calls are saved as successes; the call n8n was killed in left none
		// or, when n8n had saved it already, one that its restart marks crashed. Nothing re-runs it by itself.
		const executions = (await n8n.executions(workflowId)).map((e) => `${e.mode}:${e.status}`);
		assert.deepEqual(executions.filter((e) => e === 'webhook:success'), ['webhook:success', 'webhook:success']);
		assert.deepEqual(executions.filter((e) => e !== 'webhook:success' && e !== 'webhook:crashed'), []);
		assert.equal((await requestsFor(HELD)).length, 1);
	});

	it('after the restart, a new session: the handle is unknown_handle, the same call interrupted_send, neither sent; the old session is gone', async (t) => {
		const second = await mcpClient(url());
		try {
			const byHandle = await callTool(second, GENERATE_TOOL, args(HELD, { handle: running.json[0].handle }));
			assert.equal(byHandle.isError, true, byHandle.text);
			assert.match(byHandle.text, /Error code: unknown_handle\. Nothing was sent and no credits were used\./);
			assert.match(byHandle.text, /n8n restarted/);
			assert.equal((await requestsFor(HELD)).length, 1, 'the handle sent nothing');

			const repeat = await callTool(second, GENERATE_TOOL, args(HELD));
			assert.equal(repeat.isError, true, repeat.text);
			assert.match(repeat.text, /Error code: interrupted_send\./);
			assert.match(repeat.text, /may have been charged/);
			assert.equal((await requestsFor(HELD)).length, 1, 'not sent again');

			// Now that the process holds the failure for these arguments, the handle gets it too, and so
			// does every repeat (held.ts keeps an uncertain failure for 10 minutes).
			const handleAgain = await callTool(second, GENERATE_TOOL, args(HELD, { handle: running.json[0].handle }));
			assert.equal(handleAgain.text, repeat.text);
			const again = await callTool(second, GENERATE_TOOL, args(HELD));
			assert.equal(again.text, repeat.text);
			t.diagnostic(`the repeat's answer: ${repeat.text}`);

			assert.equal((await requestsFor(HELD)).length, 1, 'one generate request for the prompt in all');
			const [turn] = (await emulator.control.turns()).filter((t) => t.prompt === HELD);
			const charges = (await emulator.control.ledger()).entries.filter((e) => e.type === 'charge' && e.turnId === turn.id);
			assert.equal(charges.length, 1, 'charged once');
		} finally {
			await second.close();
		}
		// The session made before the kill is unknown to the restarted n8n (same URL).
		const stale = await callTool(first, GENERATE_TOOL, args(CONTROL)).catch((error) => error);
		t.diagnostic(`the session made before the kill: ${stale instanceof Error ? `${stale.code}: ${stale.message}` : JSON.stringify(stale).slice(0, 200)}`);
		assert.ok(stale instanceof Error);
		assert.match(stale.message, /404|Session not found/);
		assert.equal((await requestsFor(CONTROL)).length, 0);
	});

	it('control: a collected answer leaves no record: the same call after the restart, and call, images, call again, each generate', async () => {
		const client = await mcpClient(url());
		try {
			const collectedAgain = await callTool(client, GENERATE_TOOL, args(COLLECTED));
			assert.equal(collectedAgain.isError, false, collectedAgain.text);
			assert.equal((await requestsFor(COLLECTED)).length, 2, 'collected before the kill: sent again after the restart');

			const one = await callTool(client, GENERATE_TOOL, args(CONTROL));
			assert.equal(one.isError, false, one.text);
			const two = await callTool(client, GENERATE_TOOL, args(CONTROL));
			assert.equal(two.isError, false, two.text);
			assert.notEqual(two.json[0].turn_id, one.json[0].turn_id);
			assert.equal((await requestsFor(CONTROL)).length, 2, 'two calls, two generations');
		} finally {
			await client.close();
		}
	});

	it("the collecting call n8n was killed in: no answer, it ends by the SDK's own request timeout", async (t) => {
		await inflight.promise;
		t.diagnostic(`${inflight.error ? `rejected (${inflight.error.code}: ${inflight.error.message})` : `answered ${JSON.stringify(inflight.result).slice(0, 200)}`} after ${inflight.ms} ms`);
		assert.ok(inflight.error, inflight.result && JSON.stringify(inflight.result));
		assert.equal(inflight.error.code, -32001, inflight.error.message);
		assert.ok(inflight.ms >= INFLIGHT_TIMEOUT_MS - 100, `${inflight.ms} ms`);
	});
});
