/**
 * The chat example as a conversation in a running n8n 2.41.1 (`n8n start`): the example's AI Agent 3
 * with Simple Memory, the OpenAI Chat Model pointed at the scripted model (scripted-model.mjs), the
 * Image Pack tools at the emulator. The test's own copy of the chat is public so that chat messages
 * can be sent over HTTP as n8n's chat widget sends them; Simple Memory lives in the n8n process, so
 * the messages of one session go to one running n8n.
 *
 * What it proves: every image of a Generate tool result comes with a link the person can open (the
 * test opens it, without the key), the model is told to show it, and a second message of the same
 * session refines the first image: the scripted model reads the first result's image id and session id
 * from the history n8n sends it, and the emulator receives them.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { GENERATE, conversationScenario, earlierImages, lastResult, modelCredential, publicChatExample } from './agent-scenarios.mjs';
import { emulatorCredential, startTestEmulator, waitFor } from './fixtures.mjs';
import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, startN8n } from './n8n.mjs';
import { startScriptedModel } from './scripted-model.mjs';

const WORKFLOW = 'e2eAgentChat0001';

describe('AI Agent chat in n8n 2.41.1: images the chat can show, a conversation that refines them', () => {
	const webhookId = randomUUID();
	let emulator;
	let model;
	let userFolder;
	let n8n;
	let toolDescriptions;

	before(async () => {
		({ TOOL_DESCRIPTIONS: toolDescriptions } = await import('../../nodes/ImagePack/actions/tool.ts'));
		emulator = await startTestEmulator();
		model = await startScriptedModel({ scenarios: { conversation: conversationScenario }, defaultScenario: 'conversation' });
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		const credential = emulatorCredential(emulator);
		await importCredential(userFolder.dir, [credential, modelCredential(model)]);
		await importWorkflow(userFolder.dir, publicChatExample({ id: WORKFLOW, webhookId, credential, model }));
		await publishWorkflow(userFolder.dir, WORKFLOW);
		n8n = await startN8n({ userFolder: userFolder.dir });
		await waitFor(
			async () => {
				// Asks for nothing but the (unsupported) earlier session: no execution starts.
				const response = await fetch(chatUrl(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ action: 'loadPreviousSession', sessionId: 'probe' }) });
				await response.arrayBuffer();
				return response.status !== 404; // right after the start the webhook is not registered yet
			},
			{ what: 'the chat webhook to be registered' },
		);
	});

	after(async () => {
		await n8n?.stop();
		userFolder?.cleanup();
		await model?.close();
		await emulator?.close();
	});

	const chatUrl = () => `${n8n.url}/webhook/${webhookId}/chat`;

	/** One chat message as n8n's chat widget sends it; returns the reply and what the model was sent. */
	async function chat(sessionId, chatInput) {
		model.requests.length = 0;
		const response = await fetch(chatUrl(), {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ action: 'sendMessage', sessionId, chatInput }),
		});
		const text = await response.text();
		assert.equal(response.status, 200, text);
		const requests = [...model.requests];
		return { reply: JSON.parse(text).output, requests, results: requests.at(-1).results };
	}

	/** Opens a link as the person's browser would (no key); returns the bytes' sha256. */
	async function open(url) {
		const response = await fetch(url, { redirect: 'manual' });
		assert.equal(response.status, 200, `${url} answered ${response.status}`);
		assert.equal(response.headers.get('content-type'), 'image/png');
		return createHash('sha256').update(Buffer.from(await response.arrayBuffer())).digest('hex');
	}

	/** Every image of a Generate result has a link that serves it without the key, and the reply shows it. */
	async function assertShown(result, reply) {
		const stored = new Map((await emulator.control.images()).map((image) => [image.id, image]));
		assert.deepEqual(result.image_links.map((link) => link.id), result.images.map((image) => image.id));
		for (const link of result.image_links) {
			assert.ok(!link.url.includes(emulator.apiKey), 'no key in the link');
			assert.ok(Date.parse(link.expires_at) > Date.now() + 50 * 60_000, `expires_at ${link.expires_at}`);
			assert.equal(await open(link.url), stored.get(link.id).sha256);
			assert.ok(reply.includes(`](${link.url})`), 'the reply shows the image as Markdown');
		}
		assert.ok(result.images.every((image) => image.url.startsWith('/api/file/')), 'the API answer stays as returned');
	}

	it('message 1 makes an image the chat can show; message 2 of the session refines it with the ids and session id from the history', async () => {
		const session = `chat-${randomUUID()}`;
		await emulator.control.reset();

		const first = await chat(session, 'Make a square photo of a green ceramic vase on a linen tablecloth');
		const [opening] = first.requests;
		assert.match(opening.system, /Show every new image as a Markdown image: !\[short description\]\(its url from image_links\)/);
		assert.equal(opening.tools.find((tool) => tool.name === GENERATE).description, toolDescriptions.generate);
		assert.match(toolDescriptions.generate, /Show the user each image as Markdown !\[description\]\(its image_links url\).*links expire in an hour/);
		assert.deepEqual(opening.history, { messages: [], results: [] }, 'a new session starts empty');
		const made = lastResult(first.results);
		await assertShown(made, first.reply);

		const second = await chat(session, 'Same vase, but with dried flowers in it');
		const [remembered] = second.requests;
		// What the scripted model read: the first message, its tool call and result, and the reply.
		assert.deepEqual(earlierImages(remembered.history).map((result) => result.images.map((image) => image.id)), [made.images.map((image) => image.id)]);
		assert.ok(remembered.history.messages.some((message) => message.role === 'assistant' && message.text === first.reply));
		const refined = lastResult(second.results);
		const call = second.results.at(-1).args;
		assert.equal(call.referenceImageIds, made.images[0].id);
		assert.equal(call.sessionId, made.session_id);
		await assertShown(refined, second.reply);

		// The service received them: the second generation starts from the first image, in its session.
		const turns = await emulator.control.turns();
		assert.equal(turns.length, 2);
		assert.deepEqual(turns[1].refImageIds, [made.images[0].id]);
		assert.equal(turns[1].sessionId, made.session_id);
		assert.equal(refined.session_id, made.session_id);
		// Links are resolved (one GET each), never downloaded by n8n: the file host saw only this test.
		const fileHost = await emulator.control.requests({ listener: 'files' });
		assert.equal(fileHost.length, 2);
		assert.ok(fileHost.every((request) => request.headers.authorization === undefined));
	});

	it('another session has its own memory: no history, a new image', async () => {
		await emulator.control.reset();
		const other = await chat(`chat-${randomUUID()}`, 'A brass table lamp');
		assert.deepEqual(other.requests[0].history, { messages: [], results: [] });
		assert.equal(other.results[0].args.referenceImageIds, '');
		const [turn] = await emulator.control.turns();
		assert.deepEqual(turn.refImageIds, []);
	});
});
