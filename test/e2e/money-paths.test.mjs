/**
 * Issue 43's cases 2 and 4 in a running n8n 2.41.1 (regular mode, SQLite), through ONE n8n start, ONE
 * SIGKILL and ONE restart (each n8n start costs 35–40 s on a busy machine):
 *
 * (2) A small run beside a large one. Webhook → Split Out → Generate (Concurrency 8, Download Images on,
 *     On Error: Continue (using error output)), crash-kit's workflow. A large execution of LARGE products:
 *     the emulator lets the first SENT_BEFORE_KILL generations pass and holds the next CONCURRENCY once
 *     they ran and were charged (every lane stuck, the run mid-batch). A one-item execution of the SAME
 *     workflow runs and finishes beside it. n8n is SIGKILLed, restarted, and the crashed large execution
 *     retried over REST (Executions → Retry, with original workflow): at most one generate request per
 *     product across both (counted at the emulator by prompt); the products sent before the kill come
 *     out on the error output as `interrupted_send` / `may_have_been_charged`, the rest are generated.
 *
 * (4) AI Agent 3.1 (n8n 2.41.1's default version: a tool call is a workflow step whose input item
 *     carries `toolCallId`), Webhook → AI Agent ← OpenAI Chat Model 1.3 (Responses API, pointed at the
 *     scripted model through a proxy that can hold a request) and the Image Pack Generate tool. The model
 *     calls the tool, the tool answers (one generation, charged); the model's next reply is held, so the
 *     execution is still running when n8n is killed. After the restart the crashed execution is retried:
 *     the scripted model, asked afresh, calls the tool again with the same arguments under a new call id.
 *     The emulator must see ONE generate request for that prompt, and the retried call must answer
 *     `interrupted_send` / `may_have_been_charged` (not a second charge).
 *
 *     What n8n 2.41.1 does (observed, and asserted where it carries the case): at the restart, crash
 *     recovery rebuilds the execution from the event log: Webhook, OpenAI Chat Model and the tool get a
 *     run 0 marked success with an artificial item (`isArtificialRecoveredEventItem`), the AI Agent a
 *     `crashed` run. Executions → Retry (progress off, with original workflow) runs the Webhook again
 *     and then the AI Agent (`nodeWasResumed: true`) with no memory of the first call: the model is asked
 *     afresh, calls the tool with the same arguments under a new call id, and the agent runs the tool as
 *     a step of the retry (its action names the new call id; the tool node's run 1). The same resume
 *     token, the same request, occurrence 0: the node finds its kept send record and refuses.
 *
 *   IMAGEPACK_TARBALL=<tgz> node --import tsx --test test/e2e/money-paths.test.mjs
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { GENERATE as TOOL_NAME, answer, newImage } from './agent-scenarios.mjs';
import { GENERATE, crashableN8n, heldRequests, outputsLine, perProduct, products, skusOf, webhookWorkflow } from './crash-kit.mjs';
import { loadExample, startTestEmulator, waitFor } from './fixtures.mjs';
import { createUserFolder, packPackage, querySqlite, startN8n } from './n8n.mjs';
import { startScriptedModel } from './scripted-model.mjs';

const OWNER = { email: 'owner@example.com', password: 'Money-Paths-Password-1' };
const LARGE = 120;
const CONCURRENCY = 8;
/** Generations that answer before the emulator starts holding the large run's lanes. */
const SENT_BEFORE_KILL = 40;
const HELD_LANES = CONCURRENCY;
const AGENT_PROMPT = 'money paths agent: a brass desk lamp on an oak desk, warm evening light';
const TOOL_NODE = 'Generate product images';
const AGENT = 'AI Agent';

const to = (node, type = 'main') => [[{ node, type, index: 0 }]];

/** Webhook → AI Agent 3.1 (prompt from the body) ← OpenAI Chat Model 1.3, ← the example's Generate tool. */
function agentWorkflow({ credential, model }) {
	const tool = structuredClone(loadExample('ai-agent-tool.json').nodes.find((node) => node.name === TOOL_NODE));
	tool.credentials = { imagePackApi: { id: credential.id, name: credential.name } };
	return {
		name: 'money paths: agent',
		settings: { executionOrder: 'v1', saveManualExecutions: true },
		nodes: [
			{ id: 'webhook', name: 'Webhook', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0], webhookId: 'mp-agent-hook', parameters: { httpMethod: 'POST', path: 'mp-agent', responseMode: 'onReceived', options: {} } },
			{ id: 'agent', name: AGENT, type: '@n8n/n8n-nodes-langchain.agent', typeVersion: 3.1, position: [220, 0], parameters: { promptType: 'define', text: '={{ $json.body.chatInput }}', options: { systemMessage: 'You make product photos with the Generate product images tool.' } } },
			{ id: 'model', name: 'OpenAI Chat Model', type: '@n8n/n8n-nodes-langchain.lmChatOpenAi', typeVersion: 1.3, position: [100, 240], parameters: { model: { __rl: true, mode: 'list', value: 'gpt-4.1-mini' }, options: {} }, credentials: { openAiApi: { id: model.id, name: model.name } } },
			{ ...tool, position: [360, 240] },
		],
		connections: { Webhook: { main: to(AGENT) }, 'OpenAI Chat Model': { ai_languageModel: to(AGENT, 'ai_languageModel') }, [TOOL_NODE]: { ai_tool: to(AGENT, 'ai_tool') } },
	};
}

/**
 * A proxy in front of the scripted model that records every request and, while armed, holds the first
 * request that carries a tool result (the model's reply after the tool answered): never answered, so the
 * agent's execution is still running when n8n is killed.
 */
async function startHoldingProxy(target) {
	const proxy = { armed: false, seen: [], held: [] };
	const server = http.createServer((req, res) => {
		const chunks = [];
		req.on('data', (chunk) => chunks.push(chunk));
		req.on('end', async () => {
			const text = Buffer.concat(chunks).toString('utf8');
			let body = {};
			try {
				body = JSON.parse(text);
			} catch {}
			const input = Array.isArray(body.input) ? body.input : [];
			const entry = {
				at: Date.now(),
				calls: input.filter((i) => i.type === 'function_call').map((i) => ({ id: i.call_id, name: i.name, args: i.arguments })),
				outputs: input.filter((i) => i.type === 'function_call_output').map((i) => ({ id: i.call_id, output: typeof i.output === 'string' ? i.output : JSON.stringify(i.output) })),
			};
			proxy.seen.push(entry);
			if (proxy.armed && entry.outputs.length > 0) {
				proxy.armed = false;
				entry.held = true;
				proxy.held.push(res);
				return; // never answered: n8n's kill closes the connection
			}
			try {
				const answered = await fetch(`${new URL(target).origin}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: text });
				const reply = await answered.text();
				try {
					entry.reply = JSON.parse(reply);
				} catch {}
				res.writeHead(answered.status, { 'content-type': answered.headers.get('content-type') ?? 'application/json' });
				res.end(reply);
			} catch (error) {
				res.writeHead(502);
				res.end(String(error));
			}
		});
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	proxy.baseUrl = `http://127.0.0.1:${server.address().port}/v1`;
	proxy.close = () =>
		new Promise((resolve) => {
			for (const res of proxy.held) res.destroy();
			server.closeAllConnections?.();
			server.close(() => resolve());
		});
	return proxy;
}

/** The calls the model made in its replies (Responses API function_call items): [{ id, args }]. */
const callsIn = (entry) => (entry.reply?.output ?? []).filter((o) => o.type === 'function_call').map((o) => ({ id: o.call_id, args: o.arguments }));
const parse = (text) => {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
};
/** A tool output as the model read it: n8n sends the JSON of the tool's items (an array), or text. */
const toolAnswer = (output) => {
	const json = parse(output);
	return Array.isArray(json) ? json[0] : json;
};

describe('issue 43 cases 2 and 4 in n8n 2.41.1: one kill, one restart', () => {
	let emulator;
	let model;
	let proxy;
	let userFolder;
	let n8n;
	let packed;
	const ids = {};
	const large = products('mp large', LARGE);
	const small = products('mp small', 1);
	const seen = {}; // facts gathered before the kill
	const crashed = {};
	let agentFailure; // the agent's part failed before the kill: its test reports it
	const started = Date.now();
	/** How many values n8n's deduplication row of the workflow's Generate node holds (processed_data). */
	const rowEntries = async (workflowId) => {
		const rows = await querySqlite(userFolder.dir, 'SELECT value FROM processed_data WHERE workflowId = ?', [workflowId]);
		return rows.reduce((sum, row) => sum + (JSON.parse(row.value)?.data?.length ?? 0), 0);
	};
	const phase = (name) => process.env.E2E_QUIET || process.stderr.write(`[money-paths] ${((Date.now() - started) / 1000).toFixed(1)} s: ${name}\n`);

	before(async () => {
		emulator = await startTestEmulator();
		model = await startScriptedModel({ scenarios: { agent: ({ results }) => (results.length === 0 ? { call: newImage(AGENT_PROMPT) } : answer(results)) } });
		proxy = await startHoldingProxy(model.baseUrl);
		const tarball = process.env.IMAGEPACK_TARBALL ?? (packed = await packPackage());
		userFolder = await createUserFolder({ tarball });
		n8n = crashableN8n({ userFolder: userFolder.dir, profile: 'default', owner: OWNER, startN8n });
		phase('starting n8n');
		await n8n.start();
		phase('n8n started');
		const credential = await n8n.createCredential({ name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } });
		const modelCredential = await n8n.createCredential({ name: 'Scripted model', type: 'openAiApi', data: { apiKey: 'sk-scripted-model', url: proxy.baseUrl } });
		ids.batch = await n8n.publish(webhookWorkflow({ name: 'money paths: batch', path: 'mp-batch', credential, options: { concurrency: CONCURRENCY } }));
		ids.agent = await n8n.publish(agentWorkflow({ credential, model: modelCredential }));

		// (2) The large run: SENT_BEFORE_KILL generations answer, the next HELD_LANES are charged and held.
		await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after', promptIncludes: 'mp large', skip: SENT_BEFORE_KILL, count: HELD_LANES });
		await n8n.call('mp-batch', { products: large });
		await heldRequests(emulator, HELD_LANES);
		phase(`large run mid-batch: ${HELD_LANES} lanes held`);

		// Beside it: the one-item run of the same workflow, and the agent (its reply after the tool held).
		const smallRun = (async () => {
			await n8n.call('mp-batch', { products: small });
			seen.small = await n8n.finished(ids.batch, (list) => list[1], 'the one-item run');
		})();
		const agentRun = (async () => {
			proxy.armed = true;
			await n8n.call('mp-agent', { chatInput: `Make a photo of a brass desk lamp [scenario:agent]` });
			await waitFor(() => proxy.held.length === 1, { timeoutMs: 60_000, intervalMs: 250, what: 'the model’s reply after the tool answered (held)' });
		})().catch((error) => {
			agentFailure = error;
		});
		await Promise.all([smallRun, agentRun]);
		phase(`one-item run finished (${seen.small.status}); agent ${agentFailure ? `failed: ${agentFailure.message}` : 'holding its reply'}`);
		seen.large = await perProduct(emulator, large);
		seen.rowBefore = await rowEntries(ids.batch);
		seen.agentRow = await rowEntries(ids.agent);
		seen.agentRequests = (await emulator.control.requests({ route: 'generate' })).filter((e) => e.prompt === AGENT_PROMPT).length;
		seen.agentRows = await n8n.executions(ids.agent);
		seen.modelBefore = proxy.seen.length;

		await n8n.kill();
		phase('n8n killed');
		await waitFor(async () => (await emulator.control.held()).length === 0, { timeoutMs: 30_000, what: 'the held connections to close' });
		await n8n.start();
		phase('n8n restarted');
		crashed.large = await n8n.crashed(ids.batch);
		if (!agentFailure) crashed.agent = await n8n.crashed(ids.agent).catch((error) => ({ error }));
		phase('crashed executions marked');
	});

	after(async () => {
		await n8n?.stop();
		await proxy?.close();
		await model?.close();
		await emulator?.close();
		userFolder?.cleanup();
		if (packed) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
		phase('done');
	});

	it(`case 2: a one-item run beside a ${LARGE}-product run (Concurrency ${CONCURRENCY}), the large one killed mid-batch and retried: one request per product, the sent ones interrupted_send, the rest generated`, async () => {
		const sentBefore = large.filter((_, i) => seen.large.requests[i] > 0).map((product) => product.sku);
		assert.equal(sentBefore.length, SENT_BEFORE_KILL + HELD_LANES, `the large run was mid-batch at the kill: ${seen.large.line}`);
		assert.ok(seen.large.requests.every((count) => count <= 1), seen.large.line);

		const smallSeen = await perProduct(emulator, small);
		assert.equal(seen.small.status, 'success', outputsLine(seen.small));
		assert.deepEqual(skusOf(seen.small, 0), ['SKU-1'], `the one-item run generated its product — ${outputsLine(seen.small)}`);
		assert.deepEqual(smallSeen.requests, [1], smallSeen.line);

		const retried = await n8n.retry(crashed.large);
		phase(`large run retried: ${retried.status}`);
		const after = await perProduct(emulator, large);
		const facts = `${after.line}; retry ${retried.id}: ${outputsLine(retried).slice(0, 1500)}`;
		assert.equal(retried.mode, 'retry', facts);
		assert.ok(after.requests.every((count) => count <= 1), `at most one generate request per product across the crashed run and its retry — ${facts}`);
		assert.deepEqual(after.requests, Array(LARGE).fill(1), `every product requested once — ${facts}`);
		assert.equal(retried.status, 'success', facts);
		const notSent = large.filter((product) => !sentBefore.includes(product.sku)).map((product) => product.sku);
		assert.deepEqual(skusOf(retried, 1), sentBefore, `the products sent before the kill on the error output — ${facts}`);
		for (const item of retried.nodeOutput(GENERATE, 1)) {
			assert.equal(item.json.error?.code, 'interrupted_send', `${item.json.sku} — ${facts}`);
			assert.equal(item.json.error?.charge, 'may_have_been_charged', `${item.json.sku} — ${facts}`);
		}
		assert.deepEqual(skusOf(retried, 0), notSent, `the rest generated by the retry — ${facts}`);
		assert.ok(retried.nodeOutput(GENERATE, 0).every((item) => item.json.turn_id && item.binary?.image_0), `generated with their images — ${facts}`);
		// The one-item run beside it trimmed none of the large run's records (the row: one value a send).
		assert.ok(seen.rowBefore >= sentBefore.length + 1, `the store row held ${seen.rowBefore} values after the one-item run, for ${sentBefore.length} + 1 sends — ${facts}`);
		const rowAfter = await rowEntries(ids.batch);
		process.stderr.write(
			`[money-paths] case 2: the node's store row held ${seen.rowBefore} values after the one-item run, ${rowAfter} after the retry; ${sentBefore.length} of ${LARGE} sent before the kill (requests ${seen.large.requests.reduce((a, b) => a + b, 0)}), retry: ${skusOf(retried, 0).length} generated, ${skusOf(retried, 1).length} interrupted_send; requests in all ${after.requests.reduce((a, b) => a + b, 0)}, credits charged ${after.charged.reduce((a, b) => a + b, 0)}\n`,
		);
	});

	it('case 4: AI Agent 3.1, a tool call answered, n8n killed while the model’s next reply was held, the execution retried: the same ask under a new call id is not paid again', async () => {
		if (agentFailure) throw agentFailure;
		const first = proxy.seen.slice(0, seen.modelBefore);
		const firstCall = first.flatMap(callsIn)[0];
		const heldEntry = first.find((entry) => entry.held);
		const firstAnswer = toolAnswer(heldEntry?.outputs[0]?.output);
		const before = `model requests before the kill ${JSON.stringify(first.map((e) => ({ calls: e.calls.map((c) => c.id), outputs: e.outputs.map((o) => o.id), held: !!e.held })))}; first tool answer ${JSON.stringify(firstAnswer)?.slice(0, 400)}; agent executions ${JSON.stringify(seen.agentRows.map((e) => [e.id, e.status]))}; the tool's store row ${seen.agentRow} values`;
		assert.ok(firstCall, `the model called the tool — ${before}`);
		assert.equal(firstAnswer?.ok, true, `the tool answered the first call — ${before}`);
		assert.equal(seen.agentRequests, 1, `one generate request before the kill — ${before}`);
		assert.deepEqual(seen.agentRows.map((e) => e.status), ['running'], `the agent's execution was still running at the kill — ${before}`);
		assert.ok(seen.agentRow >= 1, `the answered call's send record was kept in the tool's store row — ${before}`);
		assert.ok(crashed.agent && !crashed.agent.error, `n8n marked the agent's execution crashed — ${crashed.agent?.error?.message}; ${before}`);

		const retried = await n8n.retry(crashed.agent);
		phase(`agent retried: ${retried.status}`);
		const later = proxy.seen.slice(seen.modelBefore);
		const laterCalls = later.flatMap(callsIn);
		const laterOutputs = later.flatMap((entry) => entry.outputs);
		const requests = (await emulator.control.requests({ route: 'generate' })).filter((e) => e.prompt === AGENT_PROMPT);
		const turns = (await emulator.control.turns()).filter((t) => t.prompt === AGENT_PROMPT);
		// n8n's own view: the runs of the crashed execution (recovered from the event log at the restart)
		// and of its retry, per node: [status, what the run was].
		const [crashedRow] = (await n8n.executions(ids.agent)).filter((e) => String(e.id) === String(crashed.agent.id));
		const runsOf = (execution) =>
			Object.fromEntries(
				Object.entries(execution.run?.resultData?.runData ?? {}).map(([name, tasks]) => [
					name,
					tasks.map((task) => `${task.executionStatus}${JSON.stringify(task.data ?? null).includes('isArtificialRecoveredEventItem') ? ' (recovered)' : ''}`),
				]),
			);
		const agentRun = retried.run?.resultData?.runData?.[AGENT]?.at(-1);
		const actions = (agentRun?.metadata?.subNodeExecutionData?.actions ?? []).map((a) => ({ id: a.action?.id, node: a.nodeName, runIndex: a.runIndex }));
		const toolRuns = retried.run?.resultData?.runData?.[TOOL_NODE] ?? [];
		const toolOutput = toolRuns.at(-1)?.data?.ai_tool?.[0]?.[0]?.json;
		const facts = [
			`retry ${retried.id} ${retried.status}`,
			`model requests in the retry ${JSON.stringify(later.map((e) => ({ calls: e.calls.map((c) => c.id), outputs: e.outputs.map((o) => o.id) })))}`,
			`calls made in the retry ${JSON.stringify(laterCalls)}`,
			`generate requests ${requests.length}, turns ${turns.length}`,
			`crashed execution's runs ${JSON.stringify(runsOf(crashedRow))}`,
			`retry's runs ${JSON.stringify(runsOf(retried))}`,
			`agent's tool actions in the retry ${JSON.stringify(actions)} (resumed: ${agentRun?.metadata?.nodeWasResumed})`,
			`tool answer in the retry ${JSON.stringify(toolOutput && { code: toolOutput.code, charged: toolOutput.charged })}`,
			before,
		].join('; ');
		process.stderr.write(`[money-paths] case 4: ${facts}\n`);

		assert.equal(retried.status, 'success', facts);
		// The model was asked afresh and called the tool again: same arguments, a new call id.
		assert.equal(laterCalls.length, 1, `the model asked the tool again in the retry — ${facts}`);
		assert.notEqual(laterCalls[0].id, firstCall.id, `under a new call id — ${facts}`);
		assert.deepEqual(parse(laterCalls[0].args), parse(firstCall.args), `with the same arguments — ${facts}`);
		// n8n ran that call as a step of the retry: the agent's action names the new call id, and the tool
		// node has one run of the retry after the crash recovery's artificial one.
		assert.deepEqual(actions.map((a) => [a.id, a.node]), [[laterCalls[0].id, TOOL_NODE]], facts);
		assert.equal(toolRuns.filter((task) => !JSON.stringify(task.data ?? null).includes('isArtificialRecoveredEventItem')).length, 1, facts);
		// The money: ONE generate request and one charge for the prompt; the retried call refused.
		assert.equal(requests.length, 1, `ONE generate request for the prompt across the crashed run and its retry — ${facts}`);
		assert.equal(turns.length, 1, `charged once — ${facts}`);
		const again = toolAnswer(laterOutputs.find((o) => o.id === laterCalls[0].id)?.output);
		assert.equal(again?.code, 'interrupted_send', `the retried call answered interrupted_send — ${facts}`);
		assert.equal(again?.charged, 'may_have_been_charged', facts);
		assert.match(again?.error ?? '', /do not call again automatically/i, facts);
	});
});
