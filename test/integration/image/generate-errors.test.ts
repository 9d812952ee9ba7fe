/**
 * Image → Generate when the API refuses or the network fails: English errors with code, status and request id; faults never charge twice.
 * The node runs in a real n8n execution context against the emulator over real HTTP.
 */
import type { IDataObject } from 'n8n-workflow';

import { retryPolicy } from '../../../nodes/ImagePack/transport/limits';
import { generate, useActionNode } from '../../harness/action-node';

const { emulator, run, runError, balance } = useActionNode();

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
