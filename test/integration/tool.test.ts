/**
 * The node as an AI agent's tool (the `imagePackTool` variant n8n derives from `usableAsTool`), in real
 * n8n execution contexts against the emulator: what the model gets back on success and on failure, no
 * downloads nobody sees, and the credit cap of one execution over repeated calls.
 */
import type { IDataObject, INodeParameters, IRunExecutionData } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { useEmulator } from '../harness/emulator';
import { newRunExecutionData, runNode } from '../harness/n8n';

const emulator = useEmulator();

let calls = 0;

/** One tool call as AI Agent 3.x makes it: one input item with the model's arguments and its own call id. */
async function callTool(
	parameters: INodeParameters,
	options: { runExecutionData?: IRunExecutionData; apiKey?: string; asTool?: boolean } = {},
) {
	const [output] = await runNode({
		nodeType: new ImagePack(),
		parameters,
		items: [{ json: { toolCallId: `call_${++calls}` } }],
		credentials: { baseUrl: emulator.baseUrl, apiKey: options.apiKey ?? emulator.apiKey },
		asTool: options.asTool ?? true,
		runExecutionData: options.runExecutionData,
	});
	return output;
}

const generate = (parameters: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A green ceramic vase on a linen tablecloth',
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	...parameters,
});

const generateRequests = async () => await emulator.control.requests({ route: 'generate' });
const balance = async () => (await emulator.control.getAccount(emulator.accountId)).credits;

describe('Generate as a tool', () => {
	it('returns ids, urls, credits, session and request id as JSON, and downloads nothing', async () => {
		const [item, ...rest] = await callTool(generate({ n: 2 }));
		expect(rest).toHaveLength(0);
		expect(item.binary).toBeUndefined();
		const json = item.json as IDataObject & { images: IDataObject[] };
		expect(json).toMatchObject({
			ok: true,
			credits_charged: 24,
			credits_estimated: 24,
			session_id: expect.stringMatching(/^s_/),
			request_id: expect.stringMatching(/^req_/),
		});
		expect(json.images.map((image) => image.id)).toEqual([
			expect.stringMatching(/^img_/),
			expect.stringMatching(/^img_/),
		]);
		expect(await emulator.control.requests({ listener: 'files' })).toHaveLength(0);
	});

	it('downloads when the user turns Download Images on', async () => {
		const [item] = await callTool(generate({ options: { downloadImages: true } }));
		expect(Object.keys(item.binary ?? {})).toEqual(['image_0']);
	});

	it('a validation error is a result the model can act on: parameter, allowed values, nothing sent', async () => {
		const [item] = await callTool(generate({ model: 'seedream-5-0-pro', ratio: '4:5' }));
		expect(item.json).toMatchObject({ code: 'invalid_parameter', charged: 'not_sent' });
		const text = String(item.json.error);
		expect(text).toMatch(
			/^Image generation failed: Ratio "4:5" is not allowed for seedream-5-0-pro\. Allowed values: 1:1, 3:4, 16:9, 9:16\./,
		);
		expect(text).toMatch(/Error code: invalid_parameter\./);
		expect(text).toMatch(/Nothing was sent and no credits were used\./);
		expect(text).toMatch(/Correct that argument/);
		expect(text).not.toMatch(/Item 0/);
		expect(await generateRequests()).toHaveLength(0);
	});

	it('a 402 says the code, that nothing was charged, the request id and what to do', async () => {
		await emulator.control.setCredits(emulator.accountId, 5);
		const [item] = await callTool(generate());
		const text = String(item.json.error);
		expect(item.json).toMatchObject({
			code: 'insufficient_credits',
			httpStatus: 402,
			charged: 'not_charged',
			requestId: expect.stringMatching(/^req_/),
		});
		expect(text).toMatch(/Error code: insufficient_credits, HTTP 402\./);
		expect(text).toMatch(/no credits were charged/);
		expect(text).toContain(`Request id: ${String(item.json.requestId)}.`);
		expect(text).toMatch(/top up/);
		// The API's own message (it states the credits needed and available) reaches the model too.
		expect(text).toMatch(
			/The service’s message: 积分不足：本次生成需要 12 积分，当前余额 5 积分。/,
		);
		expect(await balance()).toBe(5);
	});

	it('a timeout after sending says it may have been charged and must not be repeated', async () => {
		await emulator.control.setLatency('generate', 3000);
		const [item] = await callTool(generate({ options: { timeoutSeconds: 1 } }));
		expect(item.json).toMatchObject({ code: 'timeout', charged: 'may_have_been_charged' });
		expect(String(item.json.error)).toMatch(/may have been charged: do not call again/);
		expect(await generateRequests()).toHaveLength(1);
	});

	it('a bad credential is text too, and the key never appears', async () => {
		const [item] = await callTool(generate(), { apiKey: 'sk_revoked_or_wrong_key' });
		expect(item.json.code).toBe('invalid_api_key');
		expect(String(item.json.error)).toMatch(/Do not retry: the user must create a new API key/);
		expect(JSON.stringify(item)).not.toContain('sk_revoked_or_wrong_key');
	});

	it('outside an agent nothing changes: the error is thrown and images are downloaded', async () => {
		await expect(callTool(generate({ ratio: '2:1' }), { asTool: false })).rejects.toThrow(
			/Ratio "2:1" is not allowed/,
		);
		const [item] = await callTool(generate(), { asTool: false });
		expect(Object.keys(item.binary ?? {})).toEqual(['image_0']);
	});
});

describe('Max Credits per Execution', () => {
	const capped = (cap: number) => generate({ options: { maxCreditsPerExecution: cap } });

	it('a model that keeps calling is stopped at the cap, with a message it can read', async () => {
		const execution = newRunExecutionData();
		const results = [];
		for (let call = 0; call < 5; call++) {
			const [item] = await callTool(capped(30), { runExecutionData: execution });
			results.push(item.json);
		}
		// 12 credits each: 12, 24 fit under 30; the third would make 36.
		expect(results.slice(0, 2).map((json) => json.credit_budget)).toEqual([
			{ cap: 30, spent: 12, remaining: 18 },
			{ cap: 30, spent: 24, remaining: 6 },
		]);
		for (const json of results.slice(2)) {
			expect(json).toMatchObject({ code: 'credit_cap_reached', charged: 'not_sent' });
			expect(String(json.error)).toMatch(
				/24 of 30 credits \(Max Credits per Execution\) are already spent or reserved, and this request could cost 12 more\. Error code: credit_cap_reached\. Nothing was sent/,
			);
		}
		expect(await generateRequests()).toHaveLength(2);
		expect(await balance()).toBe(1_000_000 - 24);
	});

	it('counts what was charged, not the estimate, and gives back refused requests', async () => {
		const execution = newRunExecutionData();
		// auto is estimated at the highest price it may pick (GPT Image 2, 15) but charged what it
		// picked (Nano Banana 2, 12).
		const [first] = await callTool(
			generate({ model: 'auto', options: { maxCreditsPerExecution: 40 } }),
			{ runExecutionData: execution },
		);
		expect(first.json).toMatchObject({ credits_estimated: 15, credits_charged: 12 });
		await emulator.control.setCredits(emulator.accountId, 5);
		const [refused] = await callTool(capped(40), { runExecutionData: execution });
		expect(refused.json.code).toBe('insufficient_credits');
		await emulator.control.setCredits(emulator.accountId, 1000);
		const [second] = await callTool(capped(40), { runExecutionData: execution });
		expect(second.json.credit_budget).toEqual({ cap: 40, spent: 24, remaining: 16 });
	});

	it('applies per execution: a new execution starts from zero', async () => {
		await callTool(capped(12), { runExecutionData: newRunExecutionData() });
		const [item] = await callTool(capped(12), { runExecutionData: newRunExecutionData() });
		expect(item.json.credit_budget).toEqual({ cap: 12, spent: 12, remaining: 0 });
	});
});

describe('other operations as a tool', () => {
	it('a publication lookup returns the record; a missing one is actionable text', async () => {
		const publication = await emulator.control.publish({ packId: 'pk_vases' });
		const [found] = await callTool({
			resource: 'publication',
			operation: 'get',
			publicationId: String(publication.id),
		});
		expect(found.json).toMatchObject({ id: publication.id, pack_id: 'pk_vases' });
		expect(found.binary).toBeUndefined();

		const [missing] = await callTool({
			resource: 'publication',
			operation: 'get',
			publicationId: '999999',
		});
		expect(missing.json).toMatchObject({ code: 'not_found', httpStatus: 404 });
		expect(String(missing.json.error)).toMatch(
			/^Reading the publication failed: The publication does not exist or belongs to another account\. Error code: not_found, HTTP 404\. This operation never costs credits\./,
		);
	});
});
