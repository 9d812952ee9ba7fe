/**
 * Contract: POST /api/v1/generate — the model table, the auto rules, the response shape, warnings,
 * sessions, reference images, the validation and billing rules, and the generation error codes and
 * limits, as the API states them.
 */
import { dimensions } from '../catalog';
import type { Ratio, Resolution } from '../catalog';
import { call, expectError, generate, setup } from './helpers';

const { emu } = setup();

const seedRefs = async (count: number, accountId?: string) =>
	(await emu().control.seedImages({ count, accountId })).images.map((i) => i.id);

const charged = async (body: Record<string, unknown>) => {
	const reply = await generate(emu(), body);
	expect(reply.status).toBe(200);
	return reply.json.credits_charged as number;
};

interface ModelRow {
	model: string;
	ratios: Ratio[];
	unsupportedRatios: Ratio[];
	resolutions: Resolution[];
	unsupportedResolutions: Resolution[];
	defaultResolution: Resolution;
	referenceLimit: number;
	prices: Partial<Record<Resolution, number>>;
	gpt: boolean;
}

const ALL_RATIOS: Ratio[] = ['1:1', '3:4', '4:5', '16:9', '9:16'];
const NO_45: Ratio[] = ['1:1', '3:4', '16:9', '9:16'];
const MODELS: ModelRow[] = [
	{ model: 'nano-banana-2', ratios: ALL_RATIOS, unsupportedRatios: [], resolutions: ['1K', '2K', '4K'], unsupportedResolutions: [], defaultResolution: '2K', referenceLimit: 14, prices: { '1K': 12, '2K': 16, '4K': 23 }, gpt: false },
	{ model: 'gpt-image-2', ratios: ALL_RATIOS, unsupportedRatios: [], resolutions: ['1K', '2K', '4K'], unsupportedResolutions: [], defaultResolution: '1K', referenceLimit: 16, prices: { '1K': 15, '2K': 15, '4K': 15 }, gpt: true },
	{ model: 'gpt-image-2.5', ratios: ALL_RATIOS, unsupportedRatios: [], resolutions: ['1K', '2K', '4K'], unsupportedResolutions: [], defaultResolution: '1K', referenceLimit: 16, prices: { '1K': 15, '2K': 15, '4K': 15 }, gpt: true },
	{ model: 'seedream-5-0-pro', ratios: NO_45, unsupportedRatios: ['4:5'], resolutions: ['1K', '2K'], unsupportedResolutions: ['4K'], defaultResolution: '1K', referenceLimit: 10, prices: { '1K': 6, '2K': 12 }, gpt: false },
	{ model: 'qwen-image-3.0-pro', ratios: NO_45, unsupportedRatios: ['4:5'], resolutions: ['1K', '2K'], unsupportedResolutions: ['4K'], defaultResolution: '1K', referenceLimit: 3, prices: { '1K': 6, '2K': 11 }, gpt: false },
];

describe('model table, row by row', () => {
	describe.each(MODELS)('$model', (row) => {
		test('supported ratios give images of exactly that ratio', async () => {
			for (const ratio of row.ratios) {
				const reply = await generate(emu(), { prompt: 'a cup', model: row.model, ratio });
				expect(reply.status).toBe(200);
				const { width, height } = reply.json.images[0];
				expect({ width, height }).toEqual(dimensions(ratio, row.defaultResolution));
				expect(reply.json.warnings).toEqual([]);
			}
		});

		test('unsupported ratios are 400 invalid_ratio, never replaced', async () => {
			for (const ratio of row.unsupportedRatios) {
				expectError(await generate(emu(), { prompt: 'a cup', model: row.model, ratio }), 400, 'invalid_ratio');
			}
		});

		test(`resolution default is ${row.defaultResolution}; supported resolutions render at their pixel size`, async () => {
			const byDefault = await generate(emu(), { prompt: 'a cup', model: row.model, ratio: '1:1' });
			expect(byDefault.json.images[0].width).toBe(dimensions('1:1', row.defaultResolution).width);
			for (const resolution of row.resolutions) {
				const reply = await generate(emu(), { prompt: 'a cup', model: row.model, ratio: '16:9', resolution });
				expect(reply.status).toBe(200);
				expect(reply.json.images[0]).toMatchObject(dimensions('16:9', resolution));
			}
			for (const resolution of row.unsupportedResolutions) {
				expectError(await generate(emu(), { prompt: 'a cup', model: row.model, resolution }), 400, 'invalid_resolution');
			}
		});

		test('credits per image', async () => {
			for (const resolution of row.resolutions) {
				expect(await charged({ prompt: 'a cup', model: row.model, resolution })).toBe(row.prices[resolution]);
				expect(await charged({ prompt: 'a cup', model: row.model, resolution, n: 2 })).toBe(2 * row.prices[resolution]!);
			}
		});

		test(row.gpt ? 'quality low / medium / high = 5 / 15 / 50, omitted = medium' : 'quality is ignored', async () => {
			const prices = await Promise.all(
				['low', 'medium', 'high', undefined].map((quality) => charged({ prompt: 'a cup', model: row.model, quality })),
			);
			const base = row.prices[row.defaultResolution];
			expect(prices).toEqual(row.gpt ? [5, 15, 50, 15] : [base, base, base, base]);
		});

		test(`reference limit ${row.referenceLimit}: at the limit works, one more is 400`, async () => {
			const refs = await seedRefs(row.referenceLimit + 1);
			const ok = await generate(emu(), { model: row.model, ref_image_ids: refs.slice(0, row.referenceLimit) });
			expect(ok.status).toBe(200);
			const perImage = row.prices[row.defaultResolution]! + (row.gpt ? row.referenceLimit : 0);
			expect(ok.json.credits_charged).toBe(perImage);
			expectError(await generate(emu(), { model: row.model, ref_image_ids: refs }), 400, 'too_many_references');
		});
	});

	test('GPT surcharge: +1 credit per reference image, per image', async () => {
		const refs = await seedRefs(3);
		expect(await charged({ prompt: 'x', model: 'gpt-image-2', ref_image_ids: refs, quality: 'high', n: 2 })).toBe(2 * (50 + 3));
		expect(await charged({ prompt: 'x', model: 'gpt-image-2.5', ref_image_ids: refs })).toBe(15 + 3);
	});
});

describe('model auto', () => {
	const lastTurn = async () => (await emu().control.turns()).slice(-1)[0];

	test('rule 1: default choice is nano-banana-2 (and model omitted means auto)', async () => {
		const reply = await generate(emu(), { prompt: 'a ceramic cup on a table' });
		expect(reply.status).toBe(200);
		expect(await lastTurn()).toMatchObject({ requestedModel: 'auto', model: 'nano-banana-2', resolution: '2K' });
		expect(reply.json.credits_charged).toBe(16);
		await generate(emu(), { prompt: 'a ceramic cup', model: 'auto' });
		expect((await lastTurn()).model).toBe('nano-banana-2');
	});

	test.each([
		'poster with the slogan "Fresh every day"',
		'banner showing the price $19.99',
		'a bottle with the brand name on the label',
		'主图上写着“限时特惠”',
	])('rule 2: text in the image → gpt-image-2 (%s)', async (prompt) => {
		const reply = await generate(emu(), { prompt });
		expect(reply.status).toBe(200);
		expect((await lastTurn()).model).toBe('gpt-image-2');
		expect(reply.json.credits_charged).toBe(15);
	});

	test('rule 3: more references than nano-banana-2 takes → a model that fits (15 and 16 → gpt-image-2)', async () => {
		const refs = await seedRefs(17);
		for (const count of [15, 16]) {
			const reply = await generate(emu(), { ref_image_ids: refs.slice(0, count) });
			expect(reply.status).toBe(200);
			expect((await lastTurn()).model).toBe('gpt-image-2');
			expect(reply.json.credits_charged).toBe(15 + count);
		}
		await generate(emu(), { ref_image_ids: refs.slice(0, 14) });
		expect((await lastTurn()).model).toBe('nano-banana-2');
		expectError(await generate(emu(), { ref_image_ids: refs }), 400, 'too_many_references');
	});

	test('rule 4: the response never reports the chosen model', async () => {
		const reply = await generate(emu(), { prompt: 'slogan "hello"' });
		expect(Object.keys(reply.json).sort()).toEqual(
			['credits_charged', 'duration_ms', 'images', 'ok', 'session_id', 'turn_id', 'warnings'].sort(),
		);
		expect(reply.text).not.toMatch(/gpt|nano|seedream|qwen/);
	});
});

describe('response', () => {
	test('fields, id forms and X-Request-Id', async () => {
		const reply = await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', ratio: '4:5', n: 2 });
		expect(reply.status).toBe(200);
		expect(reply.headers['x-request-id']).toMatch(/^req_/);
		const body = reply.json;
		expect(body).toMatchObject({ ok: true, credits_charged: 32, warnings: [] });
		expect(body.turn_id).toMatch(/^t_/);
		expect(body.session_id).toMatch(/^s_/);
		expect(typeof body.duration_ms).toBe('number');
		expect(body.images).toHaveLength(2);
		for (const image of body.images) {
			expect(image.id).toMatch(/^img_/);
			expect(image.filename).toMatch(/\.png$/);
			expect(image.url).toBe(`/api/file/${image.filename}`);
			expect({ width: image.width, height: image.height }).toEqual({ width: 1640, height: 2048 });
		}
	});

	test('defaults: ratio 3:4, n 1, purpose free', async () => {
		const reply = await generate(emu(), { prompt: 'a cup', model: 'gpt-image-2' });
		expect(reply.json.images).toHaveLength(1);
		expect(reply.json.images[0]).toMatchObject({ width: 768, height: 1024 });
		expect((await emu().control.turns())[0]).toMatchObject({ ratio: '3:4', n: 1, purposeId: 'free' });
	});

	test.each(['free', 'main_white', 'detail', 'buyer_show', 'pure_white'])('purpose_id %s is accepted', async (purpose_id) => {
		expect((await generate(emu(), { prompt: 'a cup', purpose_id })).status).toBe(200);
	});

	test('n = 1, 2, 4 deliver that many images', async () => {
		for (const n of [1, 2, 4]) expect((await generate(emu(), { prompt: 'a cup', n })).json.images).toHaveLength(n);
	});

	test('duration_ms reflects the generation time (latency on generate)', async () => {
		await emu().control.setLatency('generate', 120);
		const reply = await generate(emu(), { prompt: 'a cup' });
		expect(reply.json.duration_ms).toBeGreaterThanOrEqual(100);
	});
});

describe('warnings', () => {
	test('partial n: feature n, billing for the delivered count', async () => {
		await emu().control.setGenerationBehaviour({ deliver: 2 });
		const reply = await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', resolution: '1K', n: 4 });
		expect(reply.status).toBe(200);
		expect(reply.json.images).toHaveLength(2);
		expect(reply.json.credits_charged).toBe(24);
		expect(reply.json.warnings).toEqual([{ type: 'downgraded', feature: 'n', details: expect.any(String) }]);
	});

	test('a delivered size off the requested ratio: untouched image + downgraded warning on ratio', async () => {
		await emu().control.setGenerationBehaviour({ downgrade: { ratio: '1:1' } });
		const reply = await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', ratio: '16:9', resolution: '1K' });
		expect(reply.json.images[0]).toMatchObject({ width: 1024, height: 1024 });
		expect(reply.json.warnings).toEqual([{ type: 'downgraded', feature: 'ratio', details: expect.any(String) }]);
	});

	test('scripted resolution downgrade and unsupported warnings', async () => {
		await emu().control.setGenerationBehaviour({
			downgrade: { resolution: '2K' },
			warnings: [{ type: 'unsupported', feature: 'quality' }],
		});
		const reply = await generate(emu(), { prompt: 'a cup', model: 'gpt-image-2', resolution: '4K' });
		expect(reply.json.images[0]).toMatchObject(dimensions('3:4', '2K'));
		expect(reply.json.warnings.map((w: { type: string; feature: string }) => `${w.type}:${w.feature}`)).toEqual([
			'downgraded:resolution',
			'unsupported:quality',
		]);
	});

	test('details follow Accept-Language (English), default Chinese', async () => {
		await emu().control.setGenerationBehaviour({ deliver: 1, count: 3 });
		const zh = await generate(emu(), { prompt: 'a cup', n: 2 });
		expect(zh.json.warnings[0].details).toMatch(/[\u4e00-\u9fff]/);
		const en = await generate(emu(), { prompt: 'a cup', n: 2 }, { headers: { 'accept-language': 'en-US,en;q=0.9' } });
		expect(en.json.warnings[0].details).toMatch(/^[\x20-\x7e]+$/);
		const fr = await generate(emu(), { prompt: 'a cup', n: 2 }, { headers: { 'accept-language': 'fr-FR' } });
		expect(fr.json.warnings[0].details).toMatch(/[\u4e00-\u9fff]/);
	});

	test('behaviour is consumed: the next generation is exact again', async () => {
		await emu().control.setGenerationBehaviour({ deliver: 1 });
		await generate(emu(), { prompt: 'a cup', n: 2 });
		expect((await generate(emu(), { prompt: 'a cup', n: 2 })).json.warnings).toEqual([]);
	});
});

describe('sessions', () => {
	test('omitted session_id creates a new session titled "API生成" (English title with Accept-Language en)', async () => {
		const a = await generate(emu(), { prompt: 'a cup' });
		const b = await generate(emu(), { prompt: 'a cup' }, { headers: { 'accept-language': 'en' } });
		expect(a.json.session_id).not.toBe(b.json.session_id);
		const sessions = await emu().control.sessions();
		expect(sessions.find((s) => s.id === a.json.session_id)?.title).toBe('API生成');
		expect(sessions.find((s) => s.id === b.json.session_id)?.title).toBe('API generation');
	});

	test('passing session_id groups generations', async () => {
		const first = await generate(emu(), { prompt: 'a cup' });
		const second = await generate(emu(), { prompt: 'a cup', session_id: first.json.session_id });
		expect(second.status).toBe(200);
		expect(second.json.session_id).toBe(first.json.session_id);
		const session = (await emu().control.sessions()).find((s) => s.id === first.json.session_id);
		expect(session?.turnIds).toEqual([first.json.turn_id, second.json.turn_id]);
	});

	test('rule 4: unknown or other account session → 404 session_not_found', async () => {
		expectError(await generate(emu(), { prompt: 'a cup', session_id: 's_doesnotexist' }), 404, 'session_not_found');
		const other = await emu().control.createAccount();
		const otherKey = await emu().control.createKey({ accountId: other.accountId });
		const theirs = await generate(emu(), { prompt: 'a cup' }, { key: otherKey.key });
		expectError(await generate(emu(), { prompt: 'a cup', session_id: theirs.json.session_id }), 404, 'session_not_found');
	});
});

describe('reference images and rule 3', () => {
	test('images[].id of earlier calls are usable references', async () => {
		const first = await generate(emu(), { prompt: 'a cup', n: 2 });
		const second = await generate(emu(), { ref_image_ids: first.json.images.map((i: { id: string }) => i.id) });
		expect(second.status).toBe(200);
	});

	test('deleted, cleaned, foreign or unknown reference → 400 reference_image_missing, never skipped', async () => {
		const [deleted, cleaned, fine] = await seedRefs(3);
		await emu().control.deleteImage(deleted);
		await emu().control.cleanImage(emu().accountId, cleaned);
		const other = await emu().control.createAccount();
		const [foreign] = await seedRefs(1, other.accountId);
		for (const bad of [deleted, cleaned, foreign, 'img_unknown']) {
			const before = (await emu().control.ledger()).entries.length;
			expectError(await generate(emu(), { prompt: 'a cup', ref_image_ids: [fine, bad] }), 400, 'reference_image_missing');
			expect((await emu().control.ledger()).entries.length).toBe(before);
		}
	});

	test('published images are never auto-cleaned and stay usable', async () => {
		const [image] = await seedRefs(1);
		await emu().control.publish({ blocks: [{ id: 'b1', type: 'images', items: [{ imageId: image }] }] });
		const cleaned = await emu().control.cleanImage(image);
		expect(cleaned).toMatchObject({ protected: true, cleaned: false });
		expect((await generate(emu(), { ref_image_ids: [image] })).status).toBe(200);
	});
});

describe('validation rules', () => {
	test('rule 1: unknown model → 400 invalid_model', async () => {
		for (const model of ['dall-e-3', 'NANO-BANANA-2', '', 42]) {
			expectError(await generate(emu(), { prompt: 'a cup', model }), 400, 'invalid_model');
		}
	});

	test('rule 1: bad values are 400 with a per-parameter code, never defaulted', async () => {
		const cases: Array<[Record<string, unknown>, string]> = [
			[{ ratio: '2:3' }, 'invalid_ratio'],
			[{ ratio: 1 }, 'invalid_ratio'],
			[{ resolution: '8K' }, 'invalid_resolution'],
			[{ resolution: '2k' }, 'invalid_resolution'],
			[{ quality: 'ultra' }, 'invalid_quality'],
			[{ n: 3 }, 'invalid_n'],
			[{ n: '2' }, 'invalid_n'],
			[{ n: 0 }, 'invalid_n'],
			[{ purpose_id: 'hero' }, 'invalid_purpose_id'],
			[{ session_id: 7 }, 'invalid_session_id'],
			[{ prompt: 5 }, 'invalid_prompt'],
			[{ ref_image_ids: 'img_1' }, 'invalid_ref_image_ids'],
			[{ colour: 'red' }, 'invalid_request'],
		];
		for (const [extra, code] of cases) {
			const reply = await generate(emu(), { prompt: 'a cup', ...extra });
			expectError(reply, 400, code);
			expect(typeof reply.json.error.param).toBe('string');
		}
		expect((await emu().control.ledger()).entries).toHaveLength(1); // only the initial grant
	});

	test('rule 2: neither prompt nor ref_image_ids → 400 invalid_request; either or both is fine', async () => {
		expectError(await generate(emu(), {}), 400, 'invalid_request');
		expectError(await generate(emu(), { prompt: '   ', ref_image_ids: [] }), 400, 'invalid_request');
		const refs = await seedRefs(1);
		expect((await generate(emu(), { ref_image_ids: refs })).status).toBe(200);
		expect((await generate(emu(), { prompt: 'a cup', ref_image_ids: refs })).status).toBe(200);
	});

	test('prompt length: 4000 characters accepted, 4001 → 400 prompt_too_long', async () => {
		expect((await generate(emu(), { prompt: '杯'.repeat(4000) })).status).toBe(200);
		expectError(await generate(emu(), { prompt: 'x'.repeat(4001) }), 400, 'prompt_too_long');
	});

	test('the body must be a JSON object sent as application/json', async () => {
		expectError(await call(emu(), 'POST', '/api/v1/generate', { raw: '{"prompt":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request');
		expectError(await generate(emu(), ['a cup']), 400, 'invalid_request');
		expectError(await generate(emu(), 'a cup'), 400, 'invalid_request');
		expectError(await call(emu(), 'POST', '/api/v1/generate', { raw: '{"prompt":"a cup"}', headers: { 'content-type': 'text/plain' } }), 400, 'invalid_request');
		expect((await call(emu(), 'POST', '/api/v1/generate', { raw: '{"prompt":"a cup"}', headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(200);
	});

	test('validation order: model before ratio before references before session', async () => {
		const refs = await seedRefs(4);
		const all = { prompt: 'a cup', ratio: '4:5', ref_image_ids: [...refs, 'img_missing'], session_id: 's_nope' };
		expectError(await generate(emu(), { ...all, model: 'nope' }), 400, 'invalid_model');
		expectError(await generate(emu(), { ...all, model: 'qwen-image-3.0-pro' }), 400, 'invalid_ratio');
		expectError(await generate(emu(), { ...all, model: 'qwen-image-3.0-pro', ratio: '1:1' }), 400, 'too_many_references');
		expectError(await generate(emu(), { ...all, model: 'nano-banana-2' }), 400, 'reference_image_missing');
		expectError(await generate(emu(), { ...all, model: 'nano-banana-2', ref_image_ids: refs }), 404, 'session_not_found');
	});
});

describe('billing rules', () => {
	test('rule 1 + 6: nano-banana-2 at 2K with n = 2 reserves 32 credits, then charges them', async () => {
		const reply = await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', resolution: '2K', n: 2 });
		expect(reply.json.credits_charged).toBe(32);
		const { entries, balance } = await emu().control.ledger();
		expect(entries.map((e) => [e.type, e.amount, e.turnId])).toEqual([
			['initial', 1_000_000, null],
			['reserve', 32, reply.json.turn_id],
			['charge', 32, reply.json.turn_id],
		]);
		expect(balance).toBe(1_000_000 - 32);
	});

	test('rule 1: the reservation is held while the model runs', async () => {
		await emu().control.setLatency('generate', 300);
		const pending = generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', resolution: '2K', n: 2 });
		let account = await emu().control.getAccount(emu().accountId);
		for (let i = 0; i < 50 && account.credits === 1_000_000; i++) account = await emu().control.getAccount(emu().accountId);
		expect(account.credits).toBe(1_000_000 - 32);
		expect((await pending).status).toBe(200);
	});

	test('rule 2: whole run fails → full refund and 500 internal_error', async () => {
		await emu().control.setGenerationBehaviour({ fail: true });
		const reply = await generate(emu(), { prompt: 'a cup', n: 4 });
		expectError(reply, 500, 'internal_error');
		const { entries, balance } = await emu().control.ledger();
		expect(entries.slice(1).map((e) => [e.type, e.amount])).toEqual([['reserve', 64], ['refund', 64]]);
		expect(balance).toBe(1_000_000);
		expect((await emu().control.turns())[0].status).toBe('failed');
	});

	test('rule 3: partial success charges the actual count, refunds the rest, net credits_charged', async () => {
		await emu().control.setGenerationBehaviour({ deliver: 2 });
		const reply = await generate(emu(), { prompt: 'a cup', model: 'gpt-image-2', quality: 'high', n: 4 });
		expect(reply.json.credits_charged).toBe(100);
		const { entries, balance } = await emu().control.ledger();
		expect(entries.slice(1).map((e) => [e.type, e.amount])).toEqual([['reserve', 200], ['charge', 100], ['refund', 100]]);
		expect(balance).toBe(1_000_000 - 100);
	});

	test('rule 4: insufficient balance → 402, nothing reserved, message states needed and current credits', async () => {
		const account = await emu().control.createAccount({ credits: 31 });
		const key = await emu().control.createKey({ accountId: account.accountId });
		const reply = await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', n: 2 }, { key: key.key });
		expectError(reply, 402, 'insufficient_credits');
		expect(reply.json.error.message).toContain('32');
		expect(reply.json.error.message).toContain('31');
		expect(reply.json.error.message).toContain('充值');
		const ledger = await emu().control.ledger(account.accountId);
		expect(ledger.entries.map((e) => e.type)).toEqual(['initial']);
		expect(ledger.balance).toBe(31);
		await emu().control.setCredits(account.accountId, 32);
		expect((await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', n: 2 }, { key: key.key })).status).toBe(200);
	});

	test('rule 5: accounts younger than 7 days spend at most 2000 credits in any 24 hours', async () => {
		const account = await emu().control.createAccount({ credits: 100_000, ageDays: 1 });
		const key = (await emu().control.createKey({ accountId: account.accountId })).key;
		const high = { prompt: 'a cup', model: 'gpt-image-2', quality: 'high', n: 4 }; // 200 credits
		for (let i = 0; i < 9; i++) expect((await generate(emu(), high, { key })).status).toBe(200); // 1800
		expect((await generate(emu(), high, { key })).status).toBe(200); // exactly 2000 is allowed
		const over = await generate(emu(), { prompt: 'a cup', model: 'gpt-image-2', quality: 'low' }, { key });
		expectError(over, 429, 'new_user_daily_limit');
		expect((await emu().control.getAccount(account.accountId)).spentLast24h).toBe(2000);
		// The window rolls: 24 hours later the spend is free again.
		await emu().control.advanceClock(24 * 60 * 60 * 1000 + 1);
		expect((await generate(emu(), high, { key })).status).toBe(200);
	});

	test('rule 5: at 7 days old the limit no longer applies; old accounts never had it', async () => {
		const account = await emu().control.createAccount({ credits: 100_000, ageDays: 6.9 });
		const key = (await emu().control.createKey({ accountId: account.accountId })).key;
		const big = { prompt: 'a cup', model: 'gpt-image-2', quality: 'high', n: 4 };
		for (let i = 0; i < 10; i++) await generate(emu(), big, { key });
		expectError(await generate(emu(), big, { key }), 429, 'new_user_daily_limit');
		await emu().control.advanceClock(0.2 * 24 * 60 * 60 * 1000);
		expect((await generate(emu(), big, { key })).status).toBe(200);
		for (let i = 0; i < 11; i++) expect((await generate(emu(), big)).status).toBe(200); // default account: 1 year old
	});
});

test('null is a value, not an absent field', async () => {
	expectError(await generate(emu(), { prompt: 'a cup', session_id: null }), 400, 'invalid_session_id');
	expectError(await generate(emu(), { prompt: 'a cup', ratio: null }), 400, 'invalid_ratio');
	expectError(await generate(emu(), { prompt: 'a cup', model: null }), 400, 'invalid_model');
});
