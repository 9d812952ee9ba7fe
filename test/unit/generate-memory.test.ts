/**
 * Generate's memory alone: what a retry does with each recorded outcome, the request digest, and
 * the records of one run in the store.
 */
import {
	MEMORY_KEY,
	type Memo,
	type Outcome,
	RunMemory,
	type StoredFailure,
	decide,
	failureOutcome,
	requestDigest,
	sendsAgainInExecution,
} from '../../nodes/ImagePack/actions/image/generate/memory';
import type { Code } from '../../nodes/ImagePack/shared/codes';

const failure = (code: Code | undefined, charge: StoredFailure['charge']): StoredFailure => ({
	code,
	requestId: 'req_1',
	charge,
	reason: 'what failed',
});

const answer = { body: { ok: true, turn_id: 't_1' }, status: 200, requestId: 'req_1' };
const asked = { digest: 'd1', executionId: 'e1', resendUncertain: false };

const memo = (outcome: Outcome, executionId = 'e1'): Memo => ({
	...outcome,
	digest: 'd1',
	executionId,
});

describe('decide', () => {
	it('sends what has no record, or a record of other parameters', () => {
		expect(decide(undefined, asked)).toEqual({ action: 'send' });
		expect(decide(memo({ kind: 'generated', answer }), { ...asked, digest: 'd2' })).toEqual({
			action: 'send',
		});
	});

	it('returns a generated item again, in the same execution and in a retried one', () => {
		const generated = memo({ kind: 'generated', answer });
		expect(decide(generated, asked)).toEqual({ action: 'replay', answer });
		expect(decide(generated, { ...asked, executionId: 'e2' })).toEqual({
			action: 'replay',
			answer,
		});
		expect(decide(generated, { ...asked, executionId: 'e2', resendUncertain: true })).toEqual({
			action: 'replay',
			answer,
		});
	});

	it('never sends an uncertain item again in the same execution, even when the option is on', () => {
		const uncertain = memo({
			kind: 'uncertain',
			failure: failure('timeout', 'may_have_been_charged'),
		});
		for (const resendUncertain of [false, true]) {
			expect(decide(uncertain, { ...asked, resendUncertain })).toEqual({
				action: 'report',
				memo: uncertain,
				sameExecution: true,
			});
		}
	});

	it('a retried execution sends an uncertain item again only with Resend Uncertain Generations', () => {
		const uncertain = memo({
			kind: 'uncertain',
			failure: failure('network_error', 'may_have_been_charged'),
		});
		expect(decide(uncertain, { ...asked, executionId: 'e2' })).toEqual({
			action: 'report',
			memo: uncertain,
			sameExecution: false,
		});
		expect(decide(uncertain, { ...asked, executionId: 'e2', resendUncertain: true })).toEqual({
			action: 'send',
		});
	});

	it.each([
		['internal_error', 'not_charged'],
		['rate_limited', 'not_charged'],
		['network_error', 'not_sent'],
		['cancelled', 'not_sent'],
	] as const)('another try of the execution sends a %s refusal again', (code, charge) => {
		expect(decide(memo({ kind: 'refused', failure: failure(code, charge) }), asked)).toEqual({
			action: 'send',
		});
	});

	it.each([
		['invalid_request', 'not_charged'],
		['reference_image_missing', 'not_charged'],
		['unauthorized', 'not_charged'],
		['invalid_api_key', 'not_charged'],
		['insufficient_scope', 'not_charged'],
		['insufficient_credits', 'not_charged'],
		['session_not_found', 'not_charged'],
		['new_user_daily_limit', 'not_charged'],
		['credit_cap_reached', 'not_sent'],
		[undefined, 'not_sent'],
	] as const)(
		'a %s refusal is reported again by the same execution and sent by a retried one',
		(code, charge) => {
			const refused = memo({ kind: 'refused', failure: failure(code, charge) });
			expect(decide(refused, asked)).toEqual({
				action: 'report',
				memo: refused,
				sameExecution: true,
			});
			expect(decide(refused, { ...asked, executionId: 'e2' })).toEqual({ action: 'send' });
		},
	);
});

describe('failureOutcome', () => {
	it('keeps what may have been charged apart from refusals', () => {
		expect(failureOutcome(failure('timeout', 'may_have_been_charged')).kind).toBe('uncertain');
		expect(failureOutcome(failure('internal_error', 'not_charged')).kind).toBe('refused');
		expect(failureOutcome(failure('network_error', 'not_sent')).kind).toBe('refused');
	});

	it('a refusal passes another try only for the codes that a second try can get past', () => {
		expect(sendsAgainInExecution(failure('internal_error', 'not_charged'))).toBe(true);
		expect(sendsAgainInExecution(failure('insufficient_credits', 'not_charged'))).toBe(false);
	});
});

describe('requestDigest', () => {
	const body = { prompt: 'a mug', model: 'auto', ratio: '3:4', n: 1, purpose_id: 'free' };

	it('depends on what was asked and the credential, not on key order', () => {
		const reordered = { n: 1, purpose_id: 'free', ratio: '3:4', model: 'auto', prompt: 'a mug' };
		expect(requestDigest(reordered, 'c1')).toBe(requestDigest(body, 'c1'));
		expect(requestDigest({ ...body, prompt: 'a cup' }, 'c1')).not.toBe(requestDigest(body, 'c1'));
		expect(requestDigest({ ...body, n: 2 }, 'c1')).not.toBe(requestDigest(body, 'c1'));
		expect(requestDigest(body, 'c2')).not.toBe(requestDigest(body, 'c1'));
		expect(requestDigest({ ...body, ref_image_ids: ['a', 'b'] })).not.toBe(
			requestDigest({ ...body, ref_image_ids: ['b', 'a'] }),
		);
		expect(requestDigest(body, 'c1')).toMatch(/^[0-9a-f]{16}$/);
	});
});

describe('RunMemory', () => {
	it('keeps records per run and item in the store, and tells runs apart', () => {
		const store: Record<string, unknown> = {};
		const first = new RunMemory(store, 0, 'e1');
		first.remember(1, 'd1', { kind: 'generated', answer });
		expect(first.recall(1)).toEqual({ kind: 'generated', answer, digest: 'd1', executionId: 'e1' });
		expect(first.recall(0)).toBeUndefined();
		expect(new RunMemory(store, 1, 'e1').recall(1)).toBeUndefined();
		// A retried execution reads the copy of the store under its own id.
		const copy = JSON.parse(JSON.stringify(store)) as Record<string, unknown>;
		expect(new RunMemory(copy, 0, 'e2').recall(1)?.executionId).toBe('e1');
		expect(Object.keys(store)).toEqual([MEMORY_KEY]);
	});

	it('forgets earlier runs, never the current or later ones', () => {
		const store: Record<string, unknown> = {};
		for (const run of [0, 1, 2])
			new RunMemory(store, run, 'e1').remember(0, 'd', { kind: 'generated', answer });
		new RunMemory(store, 1, 'e1').forgetEarlierRuns();
		expect(Object.keys(store[MEMORY_KEY] as object)).toEqual(['1', '2']);
	});

	it('starts afresh over a store value that is not its own', () => {
		const store: Record<string, unknown> = { [MEMORY_KEY]: 'garbage' };
		const memory = new RunMemory(store, 0, 'e1');
		expect(memory.recall(0)).toBeUndefined();
		memory.remember(0, 'd', {
			kind: 'refused',
			failure: failure('invalid_request', 'not_charged'),
		});
		expect(memory.recall(0)?.kind).toBe('refused');
	});
});
