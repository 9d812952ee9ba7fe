/**
 * Generate against scripted servers: every bad option value fails before any request, naming item,
 * parameter and values; any answer shape after a 200 keeps the paid result.
 */
import { generate, okGeneration, twoServers } from '../../harness/two-servers';

const GENERATE = 'POST /api/v1/generate';

const { api, run, runError } = twoServers();

describe('bad option values fail before any request, naming item, parameter and values', () => {
	it.each([
		[
			'timeoutSeconds',
			-5,
			/Timeout \(Seconds\) "-5" is not allowed\. Allowed values: numbers from 1 to 3600/,
		],
		['timeoutSeconds', 3_000_000, /numbers from 1 to 3600/],
		['timeoutSeconds', 0, /numbers from 1 to 3600/],
		['timeoutSeconds', 'soon', /"soon" is not allowed/],
		['maxCreditsPerItem', -1, /Max Credits per Item "-1"/],
		['maxCreditsPerItem', 'NaN', /Max Credits per Item "NaN"/],
		[
			'concurrency',
			2.5,
			/Concurrency "2.5" is not allowed\. Allowed values: whole numbers from 1 to 8/,
		],
		['maxFileSizeMb', 0, /Max File Size \(MB\) "0"/],
		['acceptLanguage', 'fr', /Accept Language "fr" is not allowed\. Allowed values: en, zh-CN/],
	])('%s = %p', async (name, value, message) => {
		const items = [{ json: {} }, { json: {} }];
		const error = await runError(
			generate({
				options: { [name]: `={{ $itemIndex === 1 ? ${JSON.stringify(value)} : undefined }}` },
			}),
			{ items },
		);
		expect(error.message).toMatch(/^Item 1: /);
		expect(error.message).toMatch(message);
		expect(error.description).toContain(`Parameter "${name}" of item 1`);
		expect(api.seen).toHaveLength(0);
	});

	it.each([
		['an object', '={{ { a: 1 } }}', /Prompt must be text/],
		['only NUL characters', '={{ "\\u0000\\u0000" }}', /control character U\+0000/],
	])('a prompt that is %s', async (_name, prompt, message) => {
		const error = await runError(generate({ prompt }));
		expect(error.message).toMatch(message);
		expect(api.seen).toHaveLength(0);
	});
});

describe('any answer shape after a 200 keeps the paid result', () => {
	it.each([
		['images: [null]', { ...okGeneration(0), images: [null] }, /images\[0\] is not an image/],
		['warnings: [null]', { ...okGeneration(1), warnings: [null] }, /a warning is not an object/],
		['no images', { ok: true, turn_id: 't_9', session_id: 's_9' }, /no images list/],
		['images is a string', { ...okGeneration(0), images: 'x' }, /no images list/],
		['an array body', [1, 2], /JSON but not an object/],
		['an empty body', '', /empty/],
	])('%s', async (_name, body, problem) => {
		api.script(GENERATE, (_request, reply) =>
			typeof body === 'string' ? reply.type('application/json').send(body) : reply.send(body),
		);
		api.script('GET /api/file/a_0.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1])),
		);
		const [item] = await run(generate());
		expect((item.json.answer_problems as string[]).join(' ')).toMatch(problem);
		expect(api.seen.filter((request) => request.method === 'POST')).toHaveLength(1);
	});

	it('a 10,000-entry images list for n = 1 downloads one image', async () => {
		api.script(GENERATE, (_request, reply) => reply.send(okGeneration(10_000)));
		api.script('GET /api/file/a_0.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1])),
		);
		const [item] = await run(generate());
		expect(Object.keys(item.binary ?? {})).toEqual(['image_0']);
		expect(api.seen.filter((request) => request.method === 'GET')).toHaveLength(1);
		expect((item.json.answer_problems as string[]).join(' ')).toMatch(
			/lists 10000 images for 1 requested/,
		);
	});
});

describe('a paid answer always leaves an item, and caps hold against its figures', () => {
	const noImages = { ...okGeneration(0), credits_charged: 16 };

	it.each([false, true])(
		'a 2xx with no images (One Item per Image %s): one item with the charge and the request id',
		async (splitImages) => {
			api.script(GENERATE, (_request, reply) =>
				reply.header('x-request-id', 'req_paid').send(noImages),
			);
			const output = await run(generate({ options: { splitImages } }));
			expect(output).toHaveLength(1);
			expect(output[0].json).toMatchObject({
				credits_charged: 16,
				session_id: 's_1',
				turn_id: 't_1',
				request_id: 'req_paid',
			});
			expect(output[0].pairedItem).toEqual({ item: 0 });
		},
	);

	it('a 2xx whose body breaks off (One Item per Image): one item, and the paid note counts it', async () => {
		api.script(
			GENERATE,
			(_request, reply) =>
				reply.header('x-request-id', 'req_cut').type('application/json').send('{"ok": tr'),
			(_request, reply) =>
				reply.code(402).send({ error: { code: 'insufficient_credits', message: '余额不足' } }),
		);
		const items = [{ json: {} }, { json: { n: 2 } }];
		const output = await run(generate({ options: { splitImages: true } }), {
			items,
			continueOnFail: true,
		});
		expect(output).toHaveLength(2);
		expect(output[0].json).toMatchObject({ request_id: 'req_cut', image: null });
		expect(output[1].json.error).toMatchObject({ code: 'insufficient_credits' });
		api.script(
			GENERATE,
			(_request, reply) =>
				reply.header('x-request-id', 'req_cut').type('application/json').send('{"ok": tr'),
			(_request, reply) =>
				reply.code(402).send({ error: { code: 'insufficient_credits', message: '余额不足' } }),
		);
		const error = await runError(generate({ prompt: '={{ $json.p }}' }), {
			items: [{ json: { p: 'first' } }, { json: { p: 'second' } }],
		});
		expect(error.description).toMatch(
			/Generated and charged before this error, not in the output: item 0 \(request id req_cut/,
		);
	});

	it.each([null, -40, 'twelve', undefined])(
		'credits_charged %p counts the estimate against the caps, with a note naming it',
		async (figure) => {
			api.script(GENERATE, (_request, reply) =>
				reply.send({ ...okGeneration(0), credits_charged: figure }),
			);
			const items = [{ json: {} }, { json: {} }, { json: {} }];
			// nano-banana-2 at its default 2K: 16 credits; 16 + 16 fit 40, a third does not.
			const output = await run(generate({ options: { maxCreditsPerExecution: 40 } }), {
				items,
				continueOnFail: true,
			});
			expect(api.seen.filter((request) => request.method === 'POST')).toHaveLength(2);
			expect(output[0].json.answer_problems).toContainEqual(
				expect.stringMatching(
					/^credits_charged is .+, not a number of credits: the credit caps count the estimate \(16\)/,
				),
			);
			expect(output[2].json.error).toMatchObject({ code: 'credit_cap_reached' });
		},
	);
});
