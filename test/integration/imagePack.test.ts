/**
 * The Image Pack action node in real n8n execution contexts against the emulator over real HTTP.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { retryPolicy } from '../../nodes/ImagePack/transport';
import { dimensions } from '../emulator';
import { useEmulator } from '../harness/emulator';
import { credentialReads, runNode } from '../harness/n8n';

const emulator = useEmulator();

function credentials(apiKey = emulator.apiKey) {
	return { baseUrl: emulator.baseUrl, apiKey };
}

async function run(
	parameters: INodeParameters,
	options: { items?: INodeExecutionData[]; continueOnFail?: boolean; apiKey?: string } = {},
) {
	const [output] = await runNode({
		nodeType: new ImagePack(),
		parameters,
		items: options.items,
		continueOnFail: options.continueOnFail,
		credentials: credentials(options.apiKey),
	});
	return output;
}

async function runError(
	parameters: INodeParameters,
	options: { items?: INodeExecutionData[]; apiKey?: string } = {},
) {
	try {
		await run(parameters, options);
	} catch (error) {
		return error as Error & { description?: string; context?: IDataObject };
	}
	throw new Error('expected the node to fail');
}

const generate = (parameters: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A white sneaker on a marble pedestal',
	...parameters,
});

async function balance() {
	return (await emulator.control.getAccount(emulator.accountId)).credits;
}

describe('Generate', () => {
	it('returns the API response, request id, estimate and the images as binaries', async () => {
		const before = await balance();
		const [item] = await run(
			generate({ model: 'nano-banana-2', resolution: '2K', n: 2, ratio: '1:1' }),
		);
		const json = item.json as IDataObject & { images: IDataObject[] };
		expect(json).toMatchObject({
			ok: true,
			credits_charged: 32,
			credits_estimated: 32,
			warnings: [],
		});
		expect(json.turn_id).toMatch(/^t_/);
		expect(json.session_id).toMatch(/^s_/);
		expect(json.request_id).toMatch(/^req_/);
		expect(json.images).toHaveLength(2);
		const size = dimensions('1:1', '2K');
		for (const [index, image] of json.images.entries()) {
			expect(image).toMatchObject({ width: size.width, height: size.height });
			const binary = item.binary![`image_${index}`];
			expect(binary.fileName).toBe(image.filename);
			expect(binary.mimeType).toBe('image/png');
			const bytes = Buffer.from(binary.data, 'base64');
			expect(bytes.subarray(1, 4).toString()).toBe('PNG');
			expect(bytes.readUInt32BE(16)).toBe(size.width);
			expect(bytes.readUInt32BE(20)).toBe(size.height);
		}
		expect(item.pairedItem).toEqual({ item: 0 });
		expect(before - (await balance())).toBe(32);
	});

	it('sends only the fields the user set, quality only to GPT models', async () => {
		await run(
			generate({ model: 'gpt-image-2', quality: 'high', options: { downloadImages: false } }),
		);
		await run(
			generate({ model: 'seedream-5-0-pro', quality: 'high', options: { downloadImages: false } }),
		);
		const [gpt, seedream] = await emulator.control.turns();
		expect(gpt).toMatchObject({ requestedModel: 'gpt-image-2', quality: 'high', resolution: '1K' });
		// Not sent to seedream, which ignores it; and the model's default resolution applied.
		expect(seedream).toMatchObject({
			requestedModel: 'seedream-5-0-pro',
			quality: null,
			resolution: '1K',
		});
	});

	it('chains generate → refine with the images of the previous run as references', async () => {
		const [first] = await run(generate({ options: { downloadImages: false } }));
		const [refined] = await run(
			generate({
				prompt: 'Same sneaker, blue laces',
				referenceImageIds: '={{ $json.images }}',
				sessionId: '={{ $json.session_id }}',
				options: { downloadImages: false },
			}),
			{ items: [first] },
		);
		expect(refined.json.session_id).toBe(first.json.session_id);
		const [, refine] = await emulator.control.turns();
		expect(refine.refImageIds).toEqual(
			(first.json.images as IDataObject[]).map((image) => image.id),
		);
		expect(refine.sessionId).toBe(first.json.session_id);
	});

	it('one item per image puts each image in its own item', async () => {
		const output = await run(generate({ n: 2, options: { splitImages: true } }));
		expect(output).toHaveLength(2);
		expect(output.map((item) => item.json.image_index)).toEqual([0, 1]);
		expect(output[1].binary!.data.fileName).toBe((output[1].json.image as IDataObject).filename);
		expect(output[0].json).not.toHaveProperty('images');
		expect(output.every((item) => (item.pairedItem as { item: number }).item === 0)).toBe(true);
	});

	it('keeps a partial success: n = 4, 2 delivered, billed 2, warning kept', async () => {
		await emulator.control.setGenerationBehaviour({ deliver: 2 });
		const before = await balance();
		const [item] = await run(generate({ model: 'nano-banana-2', resolution: '1K', n: 4 }));
		expect(item.json.credits_estimated).toBe(48);
		expect(item.json.credits_charged).toBe(24);
		expect(item.json.images).toHaveLength(2);
		expect(item.json.warnings).toEqual([expect.objectContaining({ feature: 'n' })]);
		expect(Object.keys(item.binary!)).toEqual(['image_0', 'image_1']);
		expect(before - (await balance())).toBe(24);
	});

	it('asks for English warnings by default and Chinese on request', async () => {
		await emulator.control.setGenerationBehaviour({ deliver: 1, count: 2 });
		const [english] = await run(generate({ n: 2, options: { downloadImages: false } }));
		const [chinese] = await run(
			generate({ n: 2, options: { downloadImages: false, acceptLanguage: 'zh-CN' } }),
		);
		const detail = (item: INodeExecutionData) =>
			String((item.json.warnings as IDataObject[])[0].details);
		expect(detail(english)).toMatch(/[a-z]/i);
		expect(detail(chinese)).toMatch(/[\u4e00-\u9fff]/);
	});

	describe('bad input fails before any request and moves no credits', () => {
		// [case, parameters of both items, parameters item 1 overrides with a bad value, message]
		const cases: Array<[string, INodeParameters, INodeParameters, RegExp]> = [
			[
				'no prompt and no references',
				{},
				{ prompt: '' },
				/Prompt is empty and no Reference Image IDs/,
			],
			[
				'prompt over 4000 characters',
				{},
				{ prompt: 'x'.repeat(4001) },
				/4001 characters; the maximum is 4000/,
			],
			[
				'unknown model',
				{},
				{ model: 'dall-e-9' },
				/Model "dall-e-9" is not allowed\. Allowed values: auto, nano-banana-2/,
			],
			[
				'ratio the model lacks',
				{ model: 'seedream-5-0-pro' },
				{ ratio: '4:5' },
				/Ratio "4:5" is not allowed for seedream-5-0-pro\. Allowed values: 1:1, 3:4, 16:9, 9:16/,
			],
			[
				'resolution the model lacks',
				{ model: 'qwen-image-3.0-pro' },
				{ resolution: '4K' },
				/Resolution "4K" is not allowed for qwen-image-3.0-pro\. Allowed values: 1K, 2K/,
			],
			[
				'too many references',
				{ model: 'qwen-image-3.0-pro' },
				{ referenceImageIds: 'img_1 img_2 img_3 img_4' },
				/4 reference images given; qwen-image-3.0-pro accepts at most 3/,
			],
			[
				'n not 1, 2 or 4',
				{},
				{ n: 3 },
				/Number of images "3" is not allowed\. Allowed values: 1, 2, 4/,
			],
			[
				'a file name as reference',
				{},
				{ referenceImageIds: 'shoe.png' },
				/"shoe.png" is not an image id/,
			],
			[
				'over the credit budget',
				{ model: 'nano-banana-2', resolution: '2K', options: { maxCreditsPerItem: 40 } },
				{ n: 4 },
				/would reserve 64 credits, more than Max Credits per Item \(40\)/,
			],
		];

		it.each(cases)('%s', async (_name, shared, bad, message) => {
			const before = await balance();
			const good = { ...defaults, ...generate(), ...shared };
			// Item 0 is valid, item 1 is not: nothing may be sent, not even item 0.
			const perItem = Object.fromEntries(
				Object.entries(bad).map(([key, value]) => [
					key,
					`={{ $itemIndex === 1 ? ${JSON.stringify(value)} : ${JSON.stringify(good[key])} }}`,
				]),
			);
			const error = await runError(generate({ ...shared, ...perItem }), {
				items: [{ json: {} }, { json: {} }],
			});
			expect(error.constructor.name).toBe('NodeOperationError');
			expect(error.message).toMatch(/^Item 1: /);
			expect(error.message).toMatch(message);
			expect(error.description).toContain('Nothing was sent and no credits were used');
			expect(await emulator.control.requests({ listener: 'api' })).toHaveLength(0);
			expect(await balance()).toBe(before);
		});
	});

	it('Continue On Fail: bad items become error items, the others go on', async () => {
		const items = [{ json: { n: 1 } }, { json: { n: 3 } }, { json: { n: 2 } }];
		await emulator.control.setCredits(emulator.accountId, 1_000_000);
		const output = await run(
			generate({ n: '={{ $json.n }}', options: { downloadImages: false } }),
			{
				items,
				continueOnFail: true,
			},
		);
		expect(output).toHaveLength(3);
		expect(output[0].json.images).toHaveLength(1);
		expect(output[1].json).toEqual({
			error: expect.stringMatching(/^Item 1: Number of images "3"/),
			code: 'invalid_parameter',
			httpStatus: null,
			requestId: null,
		});
		expect(output[2].json.images).toHaveLength(2);
		expect(output.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
	});

	it('Continue On Fail with an API error keeps its code, status and request id', async () => {
		await emulator.control.setGenerationBehaviour({ fail: true, count: 1 });
		const before = await balance();
		const output = await run(generate({ options: { downloadImages: false } }), {
			items: [{ json: {} }, { json: {} }],
			continueOnFail: true,
		});
		expect(output[0].json).toEqual({
			error: 'The generation failed on the service; the reserved credits were refunded',
			code: 'internal_error',
			httpStatus: 500,
			requestId: expect.stringMatching(/^req_/),
		});
		expect(output[1].json.ok).toBe(true);
		// The failed run was refunded; only the second one was charged.
		expect(before - (await balance())).toBe(output[1].json.credits_charged);
	});

	it('without Continue On Fail, the error names the items already charged', async () => {
		const error = await runError(
			generate({
				sessionId: '={{ $itemIndex === 1 ? "s_missing" : "" }}',
				options: { downloadImages: false },
			}),
			{ items: [{ json: {} }, { json: {} }] },
		);
		const [turn] = await emulator.control.turns();
		expect(error.message).toBe('The session does not exist or belongs to another account');
		expect(error.description).toContain(
			`Generated and charged before this error, not in the output: ${turn.id}`,
		);
	});

	it('runs 8 items with concurrency 4 and keeps input order', async () => {
		await emulator.control.setLatency('generate', 150);
		const ratios = ['1:1', '3:4', '4:5', '16:9', '9:16', '1:1', '3:4', '16:9'];
		const output = await run(
			generate({
				model: 'nano-banana-2',
				resolution: '1K',
				ratio: '={{ $json.ratio }}',
				options: { downloadImages: false, concurrency: 4 },
			}),
			{ items: ratios.map((ratio) => ({ json: { ratio } })) },
		);
		expect(output).toHaveLength(8);
		output.forEach((item, index) => {
			const image = (item.json.images as IDataObject[])[0];
			expect({ width: image.width, height: image.height }).toEqual(
				dimensions(ratios[index] as '1:1', '1K'),
			);
			expect(item.pairedItem).toEqual({ item: index });
		});
		const requests = await emulator.control.requests({ route: 'generate' });
		expect(requests).toHaveLength(8);
		// Four requests were in flight at once: the fourth arrived before the first answered.
		expect(requests[3].at - requests[0].at).toBeLessThan(150);
	});
});

const defaults: INodeParameters = {
	model: 'auto',
	ratio: '3:4',
	resolution: '',
	n: 1,
	referenceImageIds: '',
};

describe('API errors surface in English with code, status and request id', () => {
	async function scopedKey(scopes: string[]) {
		return (await emulator.control.createKey({ scopes })).key;
	}

	it('invalid_api_key for a revoked key', async () => {
		const { key } = await emulator.control.createKey({});
		await emulator.control.revokeKey(key);
		const error = await runError(generate(), { apiKey: key });
		expect(error.message).toMatch(/invalid, revoked or expired/);
		expect(error.description).toMatch(
			/code: invalid_api_key · HTTP status: 401 · request id: req_/,
		);
		expect(`${error.message} ${error.description}`).not.toContain(key);
	});

	it('insufficient_scope names the scope and the operations that need it', async () => {
		const key = await scopedKey(['documents:read']);
		const error = await runError(generate(), { apiKey: key });
		expect(error.message).toBe(
			'The API key lacks the generate:write scope, which Generate need: add it to the key in the developer center',
		);
		const readError = await runError(
			{ resource: 'publication', operation: 'getMany' },
			{ apiKey: await scopedKey(['generate:write']) },
		);
		expect(readError.message).toMatch(/lacks the documents:read scope/);
	});

	it('insufficient_credits carries the needed and current credits from the API message', async () => {
		await emulator.control.setCredits(emulator.accountId, 5);
		const error = await runError(generate({ model: 'nano-banana-2' }));
		expect(error.message).toMatch(/Not enough credits/);
		expect(error.description).toMatch(/code: insufficient_credits · HTTP status: 402/);
		expect(error.description).toMatch(/16/);
		expect(await balance()).toBe(5);
	});

	it('session_not_found', async () => {
		const error = await runError(generate({ sessionId: 's_doesnotexist' }));
		expect(error.message).toBe('The session does not exist or belongs to another account');
	});

	it('reference_image_missing for a deleted image', async () => {
		const [first] = await run(generate({ options: { downloadImages: false } }));
		const image = (first.json.images as IDataObject[])[0];
		await emulator.control.deleteImage(emulator.accountId, String(image.id));
		const error = await runError(generate({ referenceImageIds: String(image.id) }));
		expect(error.message).toMatch(/reference image no longer exists/);
	});

	it('new_user_daily_limit is not retried', async () => {
		const account = await emulator.control.createAccount({ credits: 100_000, ageDays: 1 });
		const { key } = await emulator.control.createKey({ accountId: account.accountId });
		await run(
			generate({ model: 'gpt-image-2', quality: 'high', n: 4, options: { downloadImages: false } }),
			{
				items: Array.from({ length: 10 }, () => ({ json: {} })),
				apiKey: key,
			},
		);
		await emulator.control.clearRequests();
		const error = await runError(generate({ model: 'gpt-image-2', quality: 'high', n: 4 }), {
			apiKey: key,
		});
		expect(error.message).toMatch(/younger than 7 days/);
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(1);
	});

	it('rate_limited is retried after Retry-After and then given up', async () => {
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'status',
			status: 429,
			code: 'rate_limited',
			retryAfter: 0,
			count: 10,
		});
		const error = await runError(generate());
		expect(error.message).toBe('The API key is over its rate limit');
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(
			retryPolicy.rateLimitRetries + 1,
		);
		expect(await emulator.control.turns()).toHaveLength(0);
	});

	it.each([
		[400, 'invalid_request', /rejected the request as invalid/],
		[400, 'invalid_model', /does not support the requested model/],
		[401, 'unauthorized', /No API key reached/],
		[500, 'internal_error', /refunded/],
	])('HTTP %i %s (injected)', async (status, code, message) => {
		await emulator.control.injectFault({ route: 'generate', kind: 'status', status, code });
		const error = await runError(generate());
		expect(error.message).toMatch(message);
		expect(error.description).toContain(
			`code: ${code} · HTTP status: ${status} · request id: req_`,
		);
	});

	it('a reset after the generation ran is reported, not retried', async () => {
		await emulator.control.injectFault({ route: 'generate', kind: 'reset', when: 'after' });
		const error = await runError(generate());
		expect(error.message).toMatch(
			/may have been charged: check the newest "API generation" session/,
		);
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(1);
		expect(await emulator.control.turns()).toHaveLength(1);
	});
});

describe('faults never charge twice and never lose a read', () => {
	it.each([
		['truncated body', { kind: 'truncate' as const }, /connection broke|not JSON/],
		['malformed JSON', { kind: 'malformedJson' as const }, /not JSON/],
	])(
		'generate with a %s after a 200 keeps the paid item, once, not re-sent',
		async (_name, fault, problem) => {
			await emulator.control.injectFault({ route: 'generate', ...fault });
			const [item] = await run(generate({ options: { downloadImages: false } }));
			const problems = item.json.answer_problems as string[];
			expect(problems[0]).toMatch(problem);
			expect(item.json.request_id).toMatch(/^req_/);
			expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(1);
		},
	);

	it('a generate slower than the timeout is reported as possibly charged, once', async () => {
		await emulator.control.setLatency('generate', 3000);
		const error = await runError(
			generate({ options: { downloadImages: false, timeoutSeconds: 1 } }),
		);
		expect(error.message).toMatch(
			/did not answer within 1 seconds .*\. The generation may have run/,
		);
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(1);
	});

	it.each([
		['an HTML 502', { kind: 'html' as const }],
		['a reset', { kind: 'reset' as const }],
		['a truncated body', { kind: 'truncate' as const }],
		['malformed JSON', { kind: 'malformedJson' as const }],
		['a 503', { kind: 'status' as const, status: 503 }],
	])('Get Many retries %s and returns the records', async (_name, fault) => {
		await emulator.control.publishBulk({ count: 3 });
		await emulator.control.injectFault({ route: 'listPublications', ...fault });
		const output = await run({ resource: 'publication', operation: 'getMany' });
		expect(output).toHaveLength(3);
		expect(await emulator.control.requests({ route: 'listPublications' })).toHaveLength(2);
	});
});

describe('Publications', () => {
	it('Get Publication returns the record untouched plus a normalized view (schemaVersion 3)', async () => {
		const record = await emulator.control.publish({});
		const [item] = await run({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
		});
		const { normalized, ...detail } = item.json as IDataObject & { normalized: IDataObject };
		expect(detail.manifest).toEqual(record.manifest);
		expect(detail).toMatchObject({
			id: record.id,
			pack_id: record.pack_id,
			version: record.version,
		});
		expect(normalized.schemaVersion).toBe(3);
		expect((normalized.images as IDataObject[]).length).toBeGreaterThan(0);
		expect(item.binary).toBeUndefined();
	});

	it('Get Publication downloads every downloadable image and reports deleted ones (schemaVersion 2)', async () => {
		const record = await emulator.control.publish({ schemaVersion: 2 });
		const [first] = await run({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
		});
		const images = (first.json.normalized as IDataObject).images as IDataObject[];
		expect(images.length).toBeGreaterThan(1);
		await emulator.control.deleteImage(emulator.accountId, String(images[0].imageId));
		await emulator.control.clearRequests();
		const [item] = await run({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
			options: { downloadImages: true },
		});
		const normalized = item.json.normalized as IDataObject & { images: IDataObject[] };
		expect(normalized.schemaVersion).toBe(2);
		expect(normalized.deletedImages).toBe(1);
		expect(normalized.images[0]).toMatchObject({ download_url: null, binaryProperty: null });
		expect(Object.keys(item.binary!)).toHaveLength(images.length - 1);
		const fileRequests = await emulator.control.requests({ route: 'file' });
		expect(fileRequests).toHaveLength(images.length - 1);
	});

	it('reads the credential once per execution, not once per request (n8n decrypts it anew for each read)', async () => {
		const items = Array.from({ length: 4 }, (_, i) => ({ json: { prompt: `Product ${i}` } }));
		credentialReads.count = 0;
		await emulator.control.clearRequests();
		const output = await run(
			generate({
				prompt: '={{ $json.prompt }}',
				n: 2,
				options: { downloadImages: true, concurrency: 2 },
			}),
			{ items },
		);
		expect(output).toHaveLength(4);
		expect(Object.keys(output[3].binary!)).toEqual(['image_0', 'image_1']);
		// 4 generations and 8 file requests, each with the key, all on one read of the credential.
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(4);
		expect(await emulator.control.requests({ route: 'file' })).toHaveLength(8);
		expect(credentialReads.count).toBe(1);
	});

	it('Get Publication of another account is a clear 404', async () => {
		const other = await emulator.control.createAccount({});
		const record = await emulator.control.publish({ accountId: other.accountId });
		const error = await runError({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
		});
		expect(error.message).toBe('The publication does not exist or belongs to another account');
	});

	it('Get Publication rejects a non-numeric id before sending', async () => {
		const error = await runError({
			resource: 'publication',
			operation: 'get',
			publicationId: 'pk_123',
		});
		expect(error.message).toMatch(/Publication ID "pk_123" is not a publication record id/);
		expect(await emulator.control.requests({ listener: 'api' })).toHaveLength(0);
	});

	it('Get Many returns one item per record in ascending id; Return All follows next_since_id', async () => {
		const other = await emulator.control.createAccount({});
		await emulator.control.publishBulk({ count: 450 });
		await emulator.control.publishBulk({ accountId: other.accountId, count: 10 });
		const limited = await run({ resource: 'publication', operation: 'getMany', limit: 7 });
		expect(limited).toHaveLength(7);
		await emulator.control.clearRequests();
		const all = await run({ resource: 'publication', operation: 'getMany', returnAll: true });
		expect(all).toHaveLength(450);
		const ids = all.map((item) => item.json.id as number);
		expect([...ids].sort((a, b) => a - b)).toEqual(ids);
		expect(new Set(ids).size).toBe(450);
		// 3 pages of 200 and one empty page that ends the walk.
		expect(await emulator.control.requests({ route: 'listPublications' })).toHaveLength(4);
		const since = await run({
			resource: 'publication',
			operation: 'getMany',
			sinceId: ids[444],
			returnAll: true,
		});
		expect(since.map((item) => item.json.id)).toEqual(ids.slice(445));
	});
});

describe('Download File', () => {
	it('follows the 302 to the file host without Authorization and names the binary', async () => {
		const [generated] = await run(
			generate({ model: 'nano-banana-2', resolution: '1K', options: { downloadImages: false } }),
		);
		const image = (generated.json.images as IDataObject[])[0];
		await emulator.control.clearRequests();
		for (const fileUrl of [
			String(image.url),
			String(image.filename),
			`${emulator.baseUrl}${String(image.url)}`,
		]) {
			const [item] = await run({
				resource: 'file',
				operation: 'download',
				fileUrl,
				binaryPropertyName: 'photo',
			});
			expect(item.json).toEqual({
				filename: image.filename,
				mimeType: 'image/png',
				fileSize: expect.any(Number),
			});
			expect(item.binary!.photo.fileName).toBe(image.filename);
			expect(Buffer.from(item.binary!.photo.data, 'base64').length).toBe(item.json.fileSize);
		}
		const api = await emulator.control.requests({ route: 'file' });
		const files = await emulator.control.requests({ listener: 'files' });
		expect(api).toHaveLength(3);
		expect(files).toHaveLength(3);
		for (const entry of api) expect(entry.headers.authorization).toBe(`Bearer ${emulator.apiKey}`);
		for (const entry of files) expect(entry.headers.authorization).toBeUndefined();
	});

	it('Continue On Fail: a missing file is an error item, the others download', async () => {
		const [generated] = await run(generate({ options: { downloadImages: false } }));
		const url = String((generated.json.images as IDataObject[])[0].url);
		const output = await run(
			{ resource: 'file', operation: 'download', fileUrl: '={{ $json.url }}' },
			{ items: [{ json: { url } }, { json: { url: '/api/file/nope.png' } }], continueOnFail: true },
		);
		expect(output[0].binary!.data).toBeDefined();
		expect(output[1].json).toMatchObject({
			httpStatus: 404,
			requestId: expect.stringMatching(/^req_/),
		});
	});
});

it('never puts the API key in outputs or errors', async () => {
	const outputs: unknown[] = [];
	outputs.push(await run(generate({ n: 2 })));
	outputs.push(await run({ resource: 'publication', operation: 'getMany' }));
	await emulator.control.setCredits(emulator.accountId, 0);
	const error = await runError(generate());
	outputs.push({ message: error.message, description: error.description, context: error.context });
	expect(JSON.stringify(outputs)).not.toContain(emulator.apiKey);
});
