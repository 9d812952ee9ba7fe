/**
 * What the AI agent suites share (agent.test.mjs for n8n 2.41.1, test/compat/suite.test.mjs for every version): the tool
 * names the model sees for the chat example, model moves, the example wired to the emulator and the
 * scripted model, and the assertions on the error texts a model must receive.
 */
import assert from 'node:assert/strict';

import { chatAsManualRun, loadExample, withCredential, withModelCredential } from './fixtures.mjs';

/** n8n names a tool after its node, with characters outside [A-Za-z0-9_-] replaced by "_". */
export const GENERATE = 'Generate_product_images';
export const LOOKUP = 'Look_up_a_publication';

/** The tool result a model read: n8n sends the JSON of the output items, one object here. */
export const lastResult = (results) => results.at(-1)?.json?.[0];
export const newImage = (prompt) => ({ name: GENERATE, args: { prompt, ratio: '1:1', referenceImageIds: '', sessionId: '' } });
/** A final answer quoting what the tools returned, as a model would. */
export const answer = (results) => ({ answer: `Tool results: ${results.map((result) => result.output).join(' | ')}` });

/** What the example's system message asks for: each image as Markdown from image_links, then a line of facts. */
export function showImages(result) {
	const images = result.image_links.map((link, index) => `![Product photo ${index + 1}](${link.url})`);
	const ids = result.images.map((image) => image.id).join(', ');
	return { answer: `${images.join('\n')}\n\nCredits charged: ${result.credits_charged} · image ${ids} · session ${result.session_id}` };
}

/** The Generate results a model was sent in its history (the agent's memory of earlier messages). */
export const earlierImages = (history) => history.results.filter((result) => result.name === GENERATE && result.json?.[0]?.images).map((result) => result.json[0]);

/**
 * A conversation: a new image; in a later message of the session, the last image of the history
 * refined with its ids and session id; each turn answered by showing the images.
 */
export function conversationScenario({ results, history }) {
	if (results.length === 0) {
		const previous = earlierImages(history).at(-1);
		if (!previous) return { call: newImage('A green ceramic vase on a linen tablecloth, soft daylight') };
		const referenceImageIds = previous.images.map((image) => image.id).join(', ');
		return { call: { name: GENERATE, args: { prompt: 'The same green ceramic vase, now holding dried flowers', ratio: '1:1', referenceImageIds, sessionId: previous.session_id } } };
	}
	const result = lastResult(results);
	return result.error ? answer(results) : showImages(result);
}

/** A ratio the tool refuses before sending, then a valid call the account (5 credits) cannot pay for. */
export function errorsScenario({ results }) {
	if (results.length === 0) return { call: { name: GENERATE, args: { ...newImage('A vase').args, ratio: '2:1' } } };
	if (results.length === 1) return { call: newImage('A green ceramic vase') };
	return answer(results);
}

/** The openAiApi credential pointing at the scripted model. */
export const modelCredential = (model) => ({ id: 'openAiScripted01', name: 'Scripted model', type: 'openAiApi', data: { apiKey: 'sk-scripted-model', url: model.baseUrl } });

/**
 * The chat example, credentials filled in, runnable by `n8n execute` with one chat message naming the
 * scenario; `agentVersion` / `modelVersion` swap the AI Agent's and the OpenAI Chat Model's versions.
 */
export function agentExample({ id, scenario, credential, model, agentVersion, modelVersion }) {
	const example = withModelCredential(withCredential(loadExample('ai-agent-tool.json'), credential), modelCredential(model));
	const workflow = chatAsManualRun(example, {
		id,
		name: `e2e: AI agent ${id}`,
		chatInput: `Make me a product photo of a green ceramic vase [scenario:${scenario}]`,
		agentVersion,
	});
	if (modelVersion) workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.lmChatOpenAi').typeVersion = modelVersion;
	return workflow;
}

/**
 * The chat example, credentials filled in, with its Chat Trigger made public (embedded-chat mode) so a
 * test can send chat messages over HTTP: `POST {n8n}/webhook/{webhookId}/chat`. Only the test's copy:
 * the shipped example stays private, since a public chat lets anyone spend the account's credits.
 */
export function publicChatExample({ id, webhookId, credential, model }) {
	const workflow = withModelCredential(withCredential(loadExample('ai-agent-tool.json'), credential), modelCredential(model));
	const trigger = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.chatTrigger');
	trigger.webhookId = webhookId;
	trigger.parameters = { ...trigger.parameters, public: true, mode: 'webhook' };
	return { ...workflow, id, name: `e2e: public chat ${id}` };
}

/** The tool results of errorsScenario as the model read them, and what the emulator saw. */
export async function assertErrorTexts({ results, generations, emulator }) {
	assert.equal(results.length, 2);
	const [invalid, unpaid] = results.map((result) => result.json[0]);
	assert.match(invalid.error, /^Image generation failed: Ratio "2:1" is not allowed for nano-banana-2\. Allowed values: 1:1, 3:4, 4:5, 16:9, 9:16\. Error code: invalid_parameter\. Nothing was sent and no credits were used\. Correct that argument/);
	assert.equal(generations.length, 1, 'the invalid call never reached the service');
	assert.equal(unpaid.code, 'insufficient_credits');
	assert.equal(unpaid.charged, 'not_charged');
	assert.match(unpaid.error, /^Image generation failed: Not enough credits for this generation: top up the account .*Error code: insufficient_credits, HTTP 402\. The service refused or refunded the request: no credits were charged\./);
	assert.ok(unpaid.error.includes(`Request id: ${generations[0].requestId}.`), 'the request id of the refused call');
	assert.match(unpaid.error, /Do not retry: tell the user to top up/);
	assert.doesNotMatch(JSON.stringify(results), /sk_/, 'never the key');
	assert.equal((await emulator.control.getAccount(emulator.accountId)).credits, 5);
}
