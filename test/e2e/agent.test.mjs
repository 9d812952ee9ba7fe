/**
 * The Image Pack node as an AI agent's tool in the pinned n8n 2.41.1: the shipped chat example
 * (ai-agent-tool.json: AI Agent 3, OpenAI Chat Model 1.3 on the Responses API, the Generate and the
 * Look-up-a-publication tools) run with `n8n execute` against the emulator and a scripted
 * OpenAI-compatible model (scripted-model.mjs) that records what it receives. The assertions are
 * model-side: the tool descriptions and schemas the model got, the tool results and error texts it
 * read, the final answer; and service-side: how many generations the emulator saw and charged.
 *
 * `n8n execute` starts only from a Manual Trigger, so the Chat Trigger is replaced by a node emitting
 * the chat message (fixtures.mjs, chatAsManualRun); the rest of the example runs as shipped. The same
 * example also runs on AI Agent 3.1 (the cap) and on AI Agent 2.2 with OpenAI Chat Model 1.2 on Chat
 * Completions (the error path, where 2.x used to hand the model an empty string).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { GENERATE, LOOKUP, agentExample, answer, assertErrorTexts, errorsScenario, lastResult, modelCredential, newImage } from './agent-scenarios.mjs';
import { emulatorCredential, startTestEmulator } from './fixtures.mjs';
import { createUserFolder, executeWorkflow, importCredential, importWorkflow, packPackage } from './n8n.mjs';
import { startScriptedModel } from './scripted-model.mjs';

const MISSING_PUBLICATION = 999_999;

describe('AI Agent tool in n8n 2.41.1 (scripted model, emulator)', () => {
	let emulator;
	let model;
	let userFolder;
	let publicationId;
	let toolDescriptions;

	// Each scenario is one chat message, i.e. one execution (each n8n start costs seconds).
	const scenarios = {
		// One generation, then a publication lookup and a missing one.
		happy: ({ results }) => {
			if (results.length === 0) return { call: newImage('A green ceramic vase on a linen tablecloth, soft daylight') };
			if (results.length === 1) return { call: { name: LOOKUP, args: { publicationId } } };
			if (results.length === 2) return { call: { name: LOOKUP, args: { publicationId: MISSING_PUBLICATION } } };
			return answer(results);
		},
		// A new image, a refinement with its id and session, then a model that keeps generating until refused.
		chain: ({ results }) => {
			if (results.length === 0) return { call: newImage('A green ceramic vase on a linen tablecloth') };
			const last = lastResult(results);
			if (last.error) return answer(results);
			const args = { prompt: `The same vase, variant ${results.length}`, ratio: '1:1', referenceImageIds: last.images[0].id, sessionId: last.session_id };
			return { call: { name: GENERATE, args } };
		},
		errors: errorsScenario,
	};

	const runs = {
		happy: { id: 'e2eAgentHappy001', agentVersion: 3 },
		chain: { id: 'e2eAgentChain001', agentVersion: 3.1 },
		errors: { id: 'e2eAgentErrors01', agentVersion: 3 },
		errorsV2: { id: 'e2eAgentV2Error1', agentVersion: 2.2, scenario: 'errors', modelVersion: 1.2 },
	};

	before(async () => {
		({ TOOL_DESCRIPTIONS: toolDescriptions } = await import('../../nodes/ImagePack/actions/tool.ts'));
		emulator = await startTestEmulator();
		model = await startScriptedModel({ scenarios });
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		const credential = emulatorCredential(emulator);
		await importCredential(userFolder.dir, [credential, modelCredential(model)]);
		const workflows = Object.entries(runs).map(([name, run]) => agentExample({ ...run, scenario: run.scenario ?? name, credential, model }));
		await importWorkflow(userFolder.dir, workflows);
	});

	after(async () => {
		userFolder?.cleanup();
		await model?.close();
		await emulator?.close();
	});

	/** Resets the emulator, runs one scenario's workflow; returns the run, the model's requests and the emulator's generations. */
	async function play(name, prepare) {
		await emulator.control.reset();
		await prepare?.();
		const result = await executeWorkflow(userFolder.dir, runs[name].id);
		assert.ok(result.ok, `workflow ${name} failed (${result.code}): ${JSON.stringify(result.error)}\n${result.stderr.slice(-2000)}`);
		const scenario = runs[name].scenario ?? name;
		const requests = model.forScenario(scenario).splice(0); // taken, so a later run of the scenario starts clean
		model.requests.splice(0, model.requests.length, ...model.requests.filter((r) => r.scenario !== scenario));
		return {
			answer: result.nodeOutput('AI Agent')[0]?.json.output,
			requests,
			results: requests.at(-1)?.results ?? [],
			generations: await emulator.control.requests({ route: 'generate' }),
			emulator,
		};
	}

	it('the example (AI Agent 3): the model gets both tools as declared; one call → one generate → a publication lookup → the answer', async () => {
		const { answer, requests, results, generations } = await play('happy', async () => {
			({ id: publicationId } = await emulator.control.publish({ packId: 'pk_vases' }));
		});
		assert.equal(requests[0].api, 'responses', 'OpenAI Chat Model 1.3 uses the Responses API');
		const tools = Object.fromEntries(requests[0].tools.map((tool) => [tool.name, tool]));
		assert.deepEqual(Object.keys(tools).sort(), [GENERATE, LOOKUP]);
		assert.equal(tools[GENERATE].description, toolDescriptions.generate);
		assert.equal(tools[LOOKUP].description, toolDescriptions.get);
		assert.match(tools[GENERATE].description, /nano-banana-2 12\/16\/23 at 1K\/2K\/4K/);
		assert.deepEqual(Object.keys(tools[GENERATE].parameters.properties).sort(), ['prompt', 'ratio', 'referenceImageIds', 'sessionId']);
		assert.deepEqual(Object.keys(tools[LOOKUP].parameters.properties), ['publicationId']);

		assert.equal(generations.length, 1, 'exactly one generation');
		assert.equal(results.length, 3);
		const generated = results[0].json[0];
		assert.deepEqual(Object.keys(generated).sort(), ['credit_budget', 'credits_charged', 'credits_estimated', 'duration_ms', 'image_links', 'images', 'ok', 'request_id', 'session_id', 'turn_id', 'warnings']);
		assert.equal(generated.credits_charged, 12);
		assert.deepEqual(generated.credit_budget, { cap: 60, spent: 12, remaining: 48 });
		assert.equal(generated.request_id, generations[0].requestId);
		assert.match(generated.images[0].id, /^img_/);
		assert.ok(results[0].output.length < 1000, `a compact result (${results[0].output.length} bytes)`);
		assert.equal((await emulator.control.requests({ listener: 'files' })).length, 0, 'no downloads in tool mode');
		// The image's link: resolved with the key (one GET, 302 read), served to anyone without it.
		const [link] = generated.image_links;
		assert.equal(link.id, generated.images[0].id);
		assert.equal((await emulator.control.requests({ route: 'file' })).length, 1);
		const opened = await fetch(link.url, { redirect: 'manual' });
		assert.equal(opened.status, 200);
		assert.equal(opened.headers.get('content-type'), 'image/png');
		await opened.arrayBuffer();
		const [served] = await emulator.control.requests({ listener: 'files' });
		assert.equal(served.headers.authorization, undefined);
		assert.ok(!link.url.includes(emulator.apiKey));

		const [found, missing] = results.slice(1).map((result) => result.json[0]);
		assert.equal(found.id, publicationId);
		assert.equal(found.pack_id, 'pk_vases');
		assert.ok(Array.isArray(found.normalized.images));
		assert.equal(missing.code, 'not_found');
		assert.match(missing.error, /^Reading the publication failed: The publication does not exist or belongs to another account\. Error code: not_found, HTTP 404\. This operation never costs credits\./);
		assert.ok(answer.includes(generated.images[0].url), 'the final answer reached the chat');
	});

	it('AI Agent 3.1: refines with the earlier image id and session id; a model that keeps calling is stopped by Max Credits per Execution (60)', async () => {
		const { results, generations, answer } = await play('chain');
		const turns = await emulator.control.turns();
		const [first, second] = results.map((result) => result.json[0]);
		assert.deepEqual(turns[1].refImageIds, [first.images[0].id]);
		assert.equal(turns[1].sessionId, first.session_id);
		assert.equal(second.session_id, first.session_id);

		assert.equal(generations.length, 5, '5 × 12 credits fit under 60');
		assert.equal(results.length, 6);
		assert.deepEqual(results[4].json[0].credit_budget, { cap: 60, spent: 60, remaining: 0 });
		const refused = lastResult(results);
		assert.equal(refused.code, 'credit_cap_reached');
		assert.match(refused.error, /60 of 60 credits \(Max Credits per Execution\) are already spent or reserved, and this request could cost 12 more\. Error code: credit_cap_reached\. Nothing was sent and no credits were used\. Do not call again/);
		assert.equal((await emulator.control.getAccount(emulator.accountId)).credits, 1_000_000 - 60);
		assert.match(answer, /credit_cap_reached/);
	});

	it('AI Agent 3: a validation error and a 402 reach the model as actionable text', async () => {
		const played = await play('errors', () => emulator.control.setCredits(emulator.accountId, 5));
		await assertErrorTexts(played);
		assert.match(played.answer, /insufficient_credits/);
	});

	it('AI Agent 2.2 (Chat Completions): the same errors reach the model, not an empty string', async () => {
		const played = await play('errorsV2', () => emulator.control.setCredits(emulator.accountId, 5));
		assert.equal(played.requests[0].api, 'chat', 'OpenAI Chat Model 1.2 uses Chat Completions');
		assert.equal(played.requests[0].tools.find((tool) => tool.name === GENERATE).description, toolDescriptions.generate);
		await assertErrorTexts(played);
		assert.match(played.answer, /insufficient_credits/);
	});
});
