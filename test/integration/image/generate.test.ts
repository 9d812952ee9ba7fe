/**
 * Image → Generate: parameters to request, binaries, concurrency, bad input before any request.
 * The node runs in a real n8n execution context against the emulator over real HTTP.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { dimensions } from '../../emulator';
import { credentialReads } from '../../harness/n8n';
import { generate, useActionNode } from '../../harness/action-node';

const { emulator, run, runError, balance } = useActionNode();

/** Generate's parameters as the editor stores them before the user changes any. */
const defaults: INodeParameters = {
	model: 'auto',
	ratio: '3:4',
	resolution: '',
	n: 1,
	referenceImageIds: '',
};

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

	it('Output Fields = Listing keeps only what a listing needs, the images attached', async () => {
		const [all] = await run(generate({ n: 2 }));
		const [item] = await run(generate({ n: 2, options: { outputFields: 'listing' } }));
		expect(Object.keys(item.json).sort()).toEqual([
			'credits_charged',
			'images',
			'session_id',
			'turn_id',
		]);
		expect(item.json.images).toEqual(
			(all.json.images as IDataObject[]).map(() => ({
				id: expect.any(String),
				url: expect.any(String),
			})),
		);
		expect(Object.keys(item.binary!)).toEqual(['image_0', 'image_1']);
		expect(JSON.stringify(item.json).length).toBeLessThan(JSON.stringify(all.json).length * 0.6);
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
		// Every rule is proven in test/unit/image/generate/request.test.ts; here, one of each kind (the request's
		// content, the model's catalog, an option) proves what the node does with a bad item.
		// [case, parameters of both items, parameters item 1 overrides with a bad value, message]
		const cases: Array<[string, INodeParameters, INodeParameters, RegExp]> = [
			[
				'no prompt and no references',
				{},
				{ prompt: '' },
				/Prompt is empty and no Reference Image IDs/,
			],
			[
				'ratio the model lacks',
				{ model: 'seedream-5-0-pro' },
				{ ratio: '4:5' },
				/Ratio "4:5" is not allowed for seedream-5-0-pro\. Allowed values: 1:1, 3:4, 16:9, 9:16/,
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
			error: {
				message: expect.stringMatching(/^Item 1: Number of images "3"/),
				code: 'invalid_parameter',
				httpStatus: null,
				requestId: null,
				charge: 'not_sent',
				sessionId: null,
				parameter: 'n',
				apiMessage: null,
			},
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
			error: {
				message: 'The generation failed on the service; the reserved credits were refunded',
				code: 'internal_error',
				httpStatus: 500,
				requestId: expect.stringMatching(/^req_/),
				charge: 'not_charged',
				sessionId: null,
				parameter: null,
				apiMessage: expect.any(String),
			},
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

	it('one lane: every download after the last generation, output in input order, errors in place', async () => {
		await emulator.control.setCredits(emulator.accountId, 1_000_000);
		await emulator.control.setGenerationBehaviour({ fail: true, count: 1 });
		const items = [1, 3, 2, 1].map((n) => ({ json: { n } }));
		const output = await run(generate({ n: '={{ $json.n }}', options: { concurrency: 1 } }), {
			items,
			continueOnFail: true,
		});
		expect(output.map((item) => item.json.error && (item.json.error as IDataObject).code)).toEqual([
			'internal_error',
			'invalid_parameter',
			undefined,
			undefined,
		]);
		expect(Object.keys(output[2].binary!)).toEqual(['image_0', 'image_1']);
		expect(Object.keys(output[3].binary!)).toEqual(['image_0']);
		expect(output.map((item) => item.pairedItem)).toEqual([0, 1, 2, 3].map((item) => ({ item })));
		const sequence = (await emulator.control.requests({ listener: 'api' }))
			.filter((request) => request.route === 'generate' || request.route === 'file')
			.map((request) => request.route);
		expect(sequence).toEqual(['generate', 'generate', 'generate', 'file', 'file', 'file']);
	});
});

describe('Generate: the credential', () => {
	it('reads a credential that does not depend on the item three times per run, not once per request', async () => {
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
		// 4 generations and 8 file requests, each with the key, on three reads of the credential: item
		// 0 and two indexes past the input, which tell that no field depends on the item
		// (accounts-per-item.test.ts has the other cases).
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(4);
		expect(await emulator.control.requests({ route: 'file' })).toHaveLength(8);
		expect(credentialReads.count).toBe(3);
	});
});
