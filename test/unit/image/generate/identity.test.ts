/**
 * One item's identity alone: what it is known by, and which of the execution's identical asks it is.
 */
import {
	digestOf,
	identify,
	occurrences,
	requestDigest,
	runName,
} from '../../../../nodes/ImagePack/actions/image/generate/identity';
import {
	TOOL_WINDOW_MS,
	askOf,
	inClaimsRow,
	kindOf,
	ledger,
} from '../../../../nodes/ImagePack/actions/image/generate/ledger';

const place = { node: 'wf node', run: 'token abc', fingerprint: 'f1' };
const ask = { body: { prompt: 'a mug', n: 1 }, language: 'en', call: '', idempotencyKey: '' };
const of = (changes: Partial<typeof ask> = {}, where = place, occurrence = 0) => {
	const asked = { ...ask, ...changes };
	return identify(where, asked, digestOf(asked), occurrence);
};

describe('identify', () => {
	it('a send names the run, what is asked, by which key, and its occurrence: not the run index, not the call', () => {
		const sends = [
			of(),
			of({}, { ...place, run: 'token other' }), // a new execution
			of({ body: { prompt: 'a cup', n: 1 } }), // another request
			of({ language: 'zh-CN' }), // another language of the warnings
			of({}, place, 1), // the second identical ask
			of({}, { ...place, fingerprint: 'f2' }), // the same ask of another account
		].map((identity) => identity.send);
		expect(new Set(sends).size).toBe(6);
		expect(of({ call: 'call_2' }).send).toBe(of().send); // an agent's retry asks with a new call id
	});

	it('the Idempotency Key and its account, whatever the run and the request', () => {
		const { key, keyOpen } = of({ idempotencyKey: 'sku-1' });
		expect(key).not.toBe('');
		expect(keyOpen).not.toBe(key);
		expect(
			of({ idempotencyKey: 'sku-1', body: { prompt: 'x', n: 1 } }, { ...place, run: 'token 2' })
				.key,
		).toBe(key);
		// One key under two accounts is two generations.
		expect(of({ idempotencyKey: 'sku-1' }, { ...place, fingerprint: 'f2' }).key).not.toBe(key);
		expect(of().key).toBe('');
	});

	it("a held generation: the node, the key's fingerprint and the request (any key order)", () => {
		const held = of().held;
		expect(held).toMatch(/^[0-9a-f]{16}$/);
		expect(of({ body: { n: 1, prompt: 'a mug' } as never }).held).toBe(held);
		expect(of({}, { ...place, node: 'wf other' }).held).not.toBe(held);
		expect(of({}, { ...place, fingerprint: 'f2' }).held).not.toBe(held);
		expect(of({ body: { prompt: 'q', n: 1 } }).held).not.toBe(held);
	});

	it("a tool call's windows: this one and the next, so a repeat within one window matches", () => {
		const ask = askOf(of().digest, 'f1');
		const now = 5 * TOOL_WINDOW_MS + 10;
		const windows = ledger.tool(ask, now);
		expect(windows).toHaveLength(2);
		expect(windows).toContain(ledger.tool(ask, now + TOOL_WINDOW_MS - 1)[0]);
		expect(windows).not.toContain(ledger.tool(ask, now + 2 * TOOL_WINDOW_MS)[0]);
	});

	it('a send again names the saved record it follows', () => {
		expect(ledger.again('e1', of().send)).not.toBe(ledger.again('e2', of().send));
		expect(ledger.again('e1', of().send)).not.toBe(of().send);
	});
});

describe('ledger', () => {
	it('every value says its kind, and the claims row names the node of a send only', () => {
		const item = of({ idempotencyKey: 'sku-1' });
		const values = [
			item.send,
			item.key,
			item.keyOpen,
			ledger.again('e1', item.send),
			ledger.began('run'),
			...ledger.tool('a f', 0),
		];
		expect(values.map(kindOf)).toEqual(['send', 'key', 'open', 'again', 'began', 'tool', 'tool']);
		expect(inClaimsRow('wf node', item.key)).toBe(item.key);
		expect(inClaimsRow('wf node', item.send)).toBe(`claim wf node ${item.send}`);
	});
});

describe('occurrences', () => {
	it("counts identical asks in input order, on from the execution's earlier runs", () => {
		expect(occurrences(['a', 'b', 'a', undefined, 'a'], [], {})).toEqual({
			occurrence: [0, 0, 1, 0, 2],
			after: { a: 3, b: 1 },
		});
		expect(occurrences(['a', 'a'], [], { a: 3 })).toEqual({ occurrence: [3, 4], after: { a: 5 } });
	});

	it('an item the memory recognises keeps its occurrence; the others go round it', () => {
		// Rows 1 and 2 identical; row 1 edited since: row 2 keeps occurrence 1, row 1 is a new ask.
		expect(occurrences(['edited', 'a'], [undefined, 1], {})).toEqual({
			occurrence: [0, 1],
			after: { edited: 1, a: 2 },
		});
		expect(occurrences(['a', 'a', 'a'], [undefined, 0, undefined], {}).occurrence).toEqual([
			1, 0, 2,
		]);
	});
});

describe('requestDigest', () => {
	const body = { prompt: 'a mug', model: 'auto', ratio: '3:4', n: 1, purpose_id: 'free' };

	it('depends on what was asked and the asker, not on key order', () => {
		const reordered = { n: 1, purpose_id: 'free', ratio: '3:4', model: 'auto', prompt: 'a mug' };
		expect(requestDigest(reordered, 'c1')).toBe(requestDigest(body, 'c1'));
		expect(requestDigest({ ...body, prompt: 'a cup' }, 'c1')).not.toBe(requestDigest(body, 'c1'));
		expect(requestDigest(body, 'c2')).not.toBe(requestDigest(body, 'c1'));
		expect(requestDigest({ ...body, ref_image_ids: ['a', 'b'] })).not.toBe(
			requestDigest({ ...body, ref_image_ids: ['b', 'a'] }),
		);
		expect(requestDigest(body, 'c1')).toMatch(/^[0-9a-f]{16}$/);
	});
});

describe('runName', () => {
	const context = (resumeUrl: unknown, executionId = '42') =>
		({
			getWorkflowDataProxy: () => ({ $execution: { resumeUrl } }),
			getExecutionId: () => executionId,
		}) as never;

	it('is the resume token a retry copies (n8n 2.x), else the execution id (1.x)', () => {
		expect(runName(context('http://n8n/webhook-waiting/42?signature=tok123'))).toBe('token tok123');
		expect(runName(context('http://n8n/webhook-waiting/42'))).toBe('execution 42');
		expect(runName(context(undefined))).toBe('execution 42');
	});
});
