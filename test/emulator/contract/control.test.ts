/**
 * Contract of the emulator's own facilities: request log, reset, ledger, clock, latency and every
 * injected fault kind (status, reset, slow, truncate, malformedJson, html, hold; before/after the work).
 */
import { sleep } from 'n8n-workflow';
import { request } from 'undici';

import { call, expectError, generate, setup } from './helpers';

const { emu } = setup();

const listPath = '/api/v1/image-pack-publications';

describe('request log', () => {
	test('records public requests of both listeners with lower-case headers as sent; control calls are not logged', async () => {
		await emu().control.createAccount();
		await emu().control.publish();
		expect(await emu().control.requests()).toEqual([]); // control calls only so far
		await call(emu(), 'GET', `${listPath}?since_id=3&limit=7`, { headers: { 'X-Custom': 'Yes' } });
		await call(emu(), 'POST', '/api/v1/generate', { key: null, body: { prompt: 'a cup' } });
		const log = await emu().control.requests();
		expect(log).toHaveLength(2);
		expect(log[0]).toMatchObject({
			listener: 'api',
			route: 'listPublications',
			method: 'GET',
			path: listPath,
			query: { since_id: '3', limit: '7' },
			status: 200,
			accountId: emu().accountId,
			fault: null,
		});
		expect(log[0].headers).toMatchObject({ authorization: `Bearer ${emu().apiKey}`, 'x-custom': 'Yes' });
		expect(log[0].requestId).toMatch(/^req_/);
		expect(log[1]).toMatchObject({ route: 'generate', method: 'POST', status: 401, accountId: null });
		expect(log[1].headers.authorization).toBeUndefined();
		expect((await emu().control.requests({ route: 'generate' })).map((e) => e.seq)).toEqual([log[1].seq]);
		await emu().control.clearRequests();
		expect(await emu().control.requests()).toEqual([]);
	});
});

describe('reset', () => {
	test('restores the initial state: same default key, credits, no faults/latency/behaviour/logs/clock offset', async () => {
		await generate(emu(), { prompt: 'a cup' });
		await emu().control.publish();
		await emu().control.injectFault({ route: '*', kind: 'status', count: 5 });
		await emu().control.setLatency('*', 50);
		await emu().control.setGenerationBehaviour({ fail: true, persist: true });
		await emu().control.setRateLimit({ perKeyPerMinute: 1 });
		await emu().control.advanceClock(10 * 24 * 60 * 60 * 1000);
		const info = await emu().control.reset();
		expect(info).toMatchObject({ baseUrl: emu().baseUrl, fileBaseUrl: emu().fileBaseUrl, apiKey: emu().apiKey, accountId: emu().accountId });
		expect(await emu().control.requests()).toEqual([]);
		expect(await emu().control.faults()).toEqual([]);
		expect((await emu().control.now()).offsetMs).toBe(0);
		expect((await emu().control.getAccount(emu().accountId)).credits).toBe(1_000_000);
		expect(await emu().control.latency()).toEqual({});
		// The generation behaviour was reset too: a generate succeeds again.
		const reply = await generate(emu(), { prompt: 'a cup' });
		expect(reply.status).toBe(200);
		const pubs = await call(emu(), 'GET', listPath);
		expect(pubs.json.items).toEqual([]);
		const first = await emu().control.publish();
		expect(first.id).toBe(1);
	});
});

describe('clock', () => {
	test('setClock and advanceClock move the emulator time', async () => {
		const target = Date.UTC(2027, 0, 1);
		expect((await emu().control.setClock(target)).now).toBeGreaterThanOrEqual(target);
		const advanced = await emu().control.advanceClock(1000);
		expect(advanced.now).toBeGreaterThanOrEqual(target + 1000);
		expect(advanced.now).toBeLessThan(target + 5000);
		expect((await emu().control.publish()).published_at).toBeGreaterThanOrEqual(target + 1000);
	});

	test('account age follows the clock', async () => {
		const account = await emu().control.createAccount({ ageDays: 6 });
		expect(account.isNew).toBe(true);
		await emu().control.advanceClock(24 * 60 * 60 * 1000);
		expect((await emu().control.getAccount(account.accountId)).isNew).toBe(false);
		expect((await emu().control.setAccountAge(account.accountId, 2)).isNew).toBe(true);
	});
});

describe('latency', () => {
	test('per route and for all routes; 0 removes it', async () => {
		await emu().control.setLatency('listPublications', 150);
		let started = Date.now();
		await call(emu(), 'GET', listPath);
		expect(Date.now() - started).toBeGreaterThanOrEqual(140);
		started = Date.now();
		await call(emu(), 'GET', `${listPath}/1`);
		expect(Date.now() - started).toBeLessThan(140);
		await emu().control.setLatency('listPublications', 0);
		await emu().control.setLatency('*', 150);
		started = Date.now();
		await call(emu(), 'GET', `${listPath}/1`);
		expect(Date.now() - started).toBeGreaterThanOrEqual(140);
	});
});

describe('faults', () => {
	test('status before the work: error body, nothing charged, count honoured, then normal again', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'status', status: 503, count: 2 });
		expectError(await generate(emu(), { prompt: 'a cup' }), 503, 'service_unavailable');
		expectError(await generate(emu(), { prompt: 'a cup' }), 503, 'service_unavailable');
		expect((await emu().control.ledger()).entries).toHaveLength(1);
		expect((await generate(emu(), { prompt: 'a cup' })).status).toBe(200);
		const log = await emu().control.requests();
		expect(log.map((e) => e.fault)).toEqual(['status:before', 'status:before', null]);
	});

	test('status after the work: the client sees an error but the run was charged', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'status', status: 502, when: 'after' });
		expectError(await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2' }), 502, 'bad_gateway');
		const ledger = await emu().control.ledger();
		expect(ledger.entries.map((e) => e.type)).toEqual(['initial', 'reserve', 'charge']);
		expect(ledger.balance).toBe(1_000_000 - 16);
	});

	test('status 429 with code and Retry-After', async () => {
		await emu().control.injectFault({ route: 'listPublications', kind: 'status', status: 429, code: 'rate_limited', retryAfter: 7 });
		const reply = await call(emu(), 'GET', listPath);
		expectError(reply, 429, 'rate_limited');
		expect(reply.headers['retry-after']).toBe('7');
	});

	test('reset before (nothing done) and after (charged) destroy the connection', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'reset' });
		await expect(generate(emu(), { prompt: 'a cup' })).rejects.toThrow();
		expect((await emu().control.ledger()).entries).toHaveLength(1);
		await emu().control.injectFault({ route: 'generate', kind: 'reset', when: 'after' });
		await expect(generate(emu(), { prompt: 'a cup', model: 'nano-banana-2' })).rejects.toThrow();
		expect((await emu().control.ledger()).balance).toBe(1_000_000 - 16);
		const log = await emu().control.requests();
		expect(log.map((e) => [e.status, e.fault])).toEqual([
			[null, 'reset:before'],
			[null, 'reset:after'],
		]);
		expect((await emu().control.turns()).map((t) => t.status)).toEqual(['succeeded']);
	});

	test('promptIncludes aims a fault and a behaviour at one item of a batch; the others pass by', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'status', status: 503, promptIncludes: 'item 2' });
		await emu().control.setGenerationBehaviour({ fail: true, promptIncludes: 'item 3' });
		const cup = { model: 'nano-banana-2', resolution: '1K' };
		expect((await generate(emu(), { prompt: 'item 1', ...cup })).status).toBe(200);
		expectError(await generate(emu(), { prompt: 'item 2', ...cup }), 503, 'service_unavailable');
		expectError(await generate(emu(), { prompt: 'item 3', ...cup }), 500, 'internal_error');
		expect((await generate(emu(), { prompt: 'item 2', ...cup })).status).toBe(200);
		expect((await generate(emu(), { prompt: 'item 3', ...cup })).status).toBe(200);
		const log = await emu().control.requests();
		expect(log.map((e) => [e.prompt, e.status])).toEqual([
			['item 1', 200],
			['item 2', 503],
			['item 3', 500],
			['item 2', 200],
			['item 3', 200],
		]);
		expect((await emu().control.turns()).map((t) => [t.prompt, t.status])).toEqual([
			['item 1', 'succeeded'],
			['item 3', 'failed'],
			['item 2', 'succeeded'],
			['item 3', 'succeeded'],
		]);
	});

	test('slow: headers at once, the body spread over delayMs', async () => {
		await emu().control.publish();
		await emu().control.injectFault({ route: 'listPublications', kind: 'slow', delayMs: 300 });
		const started = Date.now();
		const res = await request(`${emu().baseUrl}${listPath}`, { headers: { authorization: `Bearer ${emu().apiKey}` } });
		const headersAt = Date.now() - started;
		const body = JSON.parse(await res.body.text());
		expect(headersAt).toBeLessThan(250);
		expect(Date.now() - started).toBeGreaterThanOrEqual(250);
		expect(body.items).toHaveLength(1);
	});

	test('slow before: the response starts late', async () => {
		await emu().control.injectFault({ route: 'getPublication', kind: 'slow', delayMs: 200, when: 'before' });
		const started = Date.now();
		expectError(await call(emu(), 'GET', `${listPath}/99`), 404, 'not_found');
		expect(Date.now() - started).toBeGreaterThanOrEqual(190);
	});

	test('truncate: full Content-Length announced, half the body, then the connection drops', async () => {
		await emu().control.publish();
		await emu().control.injectFault({ route: 'listPublications', kind: 'truncate' });
		const res = await request(`${emu().baseUrl}${listPath}`, { headers: { authorization: `Bearer ${emu().apiKey}` } });
		expect(res.statusCode).toBe(200);
		await expect(res.body.text()).rejects.toThrow();
	});

	test('malformedJson: 200 with a body that is not JSON', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'malformedJson' });
		const reply = await generate(emu(), { prompt: 'a cup' });
		expect(reply.status).toBe(200);
		expect(reply.headers['content-type']).toContain('application/json');
		expect(() => JSON.parse(reply.text)).toThrow();
		expect((await emu().control.ledger()).entries.map((e) => e.type)).toContain('charge');
	});

	test('html: a proxy page (502 text/html, no X-Request-Id)', async () => {
		await emu().control.injectFault({ route: 'file', kind: 'html' });
		const [image] = (await emu().control.seedImages()).images;
		const reply = await call(emu(), 'GET', image.url);
		expect(reply.status).toBe(502);
		expect(reply.headers['content-type']).toBe('text/html');
		expect(reply.text).toContain('502 Bad Gateway');
		expect(reply.headers['x-request-id']).toBeUndefined();
	});

	test("route '*' hits any public route, including the signed-link host", async () => {
		const [image] = (await emu().control.seedImages()).images;
		const redirect = await call(emu(), 'GET', image.url);
		await emu().control.injectFault({ route: 'signedFile', kind: 'status', status: 500 });
		expectError(await call(emu(), 'GET', redirect.headers.location, { key: null }), 500, 'internal_error');
		await emu().control.injectFault({ route: '*', kind: 'status', status: 504, count: 2 });
		expectError(await call(emu(), 'GET', redirect.headers.location, { key: null }), 504, 'gateway_timeout');
		expectError(await call(emu(), 'GET', listPath), 504, 'gateway_timeout');
		expect((await call(emu(), 'GET', listPath)).status).toBe(200);
		expect(await emu().control.faults()).toEqual([]);
	});

	/** Polls the held list until `count` requests are held. */
	async function heldCount(count: number) {
		for (let i = 0; i < 200; i++) {
			const held = await emu().control.held();
			if (held.length === count) return held;
			await sleep(10);
		}
		throw new Error(`never ${count} held`);
	}

	test('hold before the work: logged on arrival, nothing reserved until released, then handled normally', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'hold', promptIncludes: 'item 2' });
		const cup = { model: 'nano-banana-2', resolution: '1K' };
		expect((await generate(emu(), { prompt: 'item 1', ...cup })).status).toBe(200);
		const pending = generate(emu(), { prompt: 'item 2', ...cup });
		const [held] = await heldCount(1);
		expect(held).toMatchObject({ route: 'generate', prompt: 'item 2', when: 'before' });
		const log = await emu().control.requests({ route: 'generate' });
		expect(log.map((e) => [e.prompt, e.status, e.fault, e.held])).toEqual([
			['item 1', 200, null, null],
			['item 2', null, 'hold:before', { when: 'before', outcome: 'waiting' }],
		]);
		expect(held.seq).toBe(log[1].seq);
		expect((await emu().control.turns()).map((t) => t.prompt)).toEqual(['item 1']);
		expect(await emu().control.releaseHeld(held.seq)).toEqual([held]);
		expect((await pending).status).toBe(200);
		expect((await emu().control.turns()).map((t) => t.prompt)).toEqual(['item 1', 'item 2']);
		expect((await emu().control.requests({ route: 'generate' }))[1].held).toEqual({ when: 'before', outcome: 'released' });
		expect(await emu().control.held()).toEqual([]);
	});

	test('hold before, the client gone: the request is never processed (no turn, nothing reserved)', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'hold' });
		const abort = new AbortController();
		const pending = request(`${emu().baseUrl}/api/v1/generate`, {
			method: 'POST',
			headers: { authorization: `Bearer ${emu().apiKey}`, 'content-type': 'application/json' },
			body: JSON.stringify({ prompt: 'a cup' }),
			signal: abort.signal,
		});
		await heldCount(1);
		abort.abort();
		await expect(pending).rejects.toThrow();
		await heldCount(0);
		const [entry] = await emu().control.requests({ route: 'generate' });
		expect([entry.status, entry.held]).toEqual([null, { when: 'before', outcome: 'clientClosed' }]);
		expect(await emu().control.turns()).toEqual([]);
		expect((await emu().control.ledger()).entries.map((e) => e.type)).toEqual(['initial']);
	});

	test('hold after the work: charged at once, the answer held until released (or lost with the client)', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'hold', when: 'after', count: 2 });
		const pending = generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', resolution: '1K' });
		const [held] = await heldCount(1);
		expect(held.when).toBe('after');
		expect((await emu().control.turns()).map((t) => t.status)).toEqual(['succeeded']);
		expect((await emu().control.ledger()).entries.map((e) => e.type)).toEqual(['initial', 'reserve', 'charge']);
		await emu().control.releaseHeld();
		expect((await pending).json.credits_charged).toBe(12);

		const abort = new AbortController();
		const lost = request(`${emu().baseUrl}/api/v1/generate`, {
			method: 'POST',
			headers: { authorization: `Bearer ${emu().apiKey}`, 'content-type': 'application/json' },
			body: JSON.stringify({ prompt: 'a mug', model: 'nano-banana-2', resolution: '1K' }),
			signal: abort.signal,
		});
		await heldCount(1);
		abort.abort();
		await expect(lost).rejects.toThrow();
		await heldCount(0);
		expect((await emu().control.turns()).map((t) => [t.prompt, t.status])).toEqual([
			['a cup', 'succeeded'],
			['a mug', 'succeeded'],
		]);
		expect((await emu().control.requests({ route: 'generate' })).map((e) => [e.status, e.held?.outcome])).toEqual([
			[200, 'released'],
			[null, 'clientClosed'],
		]);
	});

	test('skip aims a fault at the k-th matching request; reset drops what is held', async () => {
		await emu().control.injectFault({ route: 'generate', kind: 'hold', skip: 2 });
		expect((await emu().control.faults())[0]).toMatchObject({ kind: 'hold', skip: 2, remaining: 1 });
		const cup = { model: 'nano-banana-2', resolution: '1K' };
		for (const prompt of ['one', 'two']) expect((await generate(emu(), { prompt, ...cup })).status).toBe(200);
		const third = generate(emu(), { prompt: 'three', ...cup });
		const [held] = await heldCount(1);
		expect(held.prompt).toBe('three');
		await emu().control.reset();
		await expect(third).rejects.toThrow();
		expect(await emu().control.held()).toEqual([]);
	});

	test('control API rejects bad scripts with 400', async () => {
		await expect(emu().control.injectFault({ route: 'nope' as never, kind: 'status' })).rejects.toThrow(/400/);
		await expect(emu().control.setLatency('generate', -1)).rejects.toThrow(/400/);
		await expect(emu().control.getAccount('acc_missing')).rejects.toThrow(/404/);
	});
});

describe('generation behaviour', () => {
	test('count and persist', async () => {
		await emu().control.setGenerationBehaviour({ fail: true, count: 2 });
		expectError(await generate(emu(), { prompt: 'a cup' }), 500, 'internal_error');
		expectError(await generate(emu(), { prompt: 'a cup' }), 500, 'internal_error');
		expect((await generate(emu(), { prompt: 'a cup' })).status).toBe(200);
		await emu().control.setGenerationBehaviour({ deliver: 1, persist: true });
		for (let i = 0; i < 3; i++) expect((await generate(emu(), { prompt: 'a cup', n: 4 })).json.images).toHaveLength(1);
		await emu().control.clearGenerationBehaviour();
		expect((await generate(emu(), { prompt: 'a cup', n: 4 })).json.images).toHaveLength(4);
	});

	test('validation failures do not consume the behaviour', async () => {
		await emu().control.setGenerationBehaviour({ fail: true });
		expectError(await generate(emu(), { prompt: 'a cup', n: 3 }), 400, 'invalid_n');
		expectError(await generate(emu(), { prompt: 'a cup' }), 500, 'internal_error');
	});
});
