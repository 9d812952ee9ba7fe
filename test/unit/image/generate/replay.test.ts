/**
 * Replay's rules alone: what a retry does with each recorded outcome, and the one rule that sorts a
 * failure into uncertain or refused.
 */
import { decide, failureOutcome } from '../../../../nodes/ImagePack/actions/image/generate/replay';
import type {
	Memo,
	StoredAnswer,
	StoredFailure,
	Outcome,
} from '../../../../nodes/ImagePack/actions/image/generate/stores';
import type { Code } from '../../../../nodes/ImagePack/shared/codes';

const failure = (code: Code | undefined, charge: StoredFailure['charge']): StoredFailure => ({
	code,
	requestId: 'req_1',
	charge,
	reason: 'what failed',
});

const answer = { body: { ok: true, turn_id: 't_1' }, status: 200, requestId: 'req_1' };
const asked = {
	digest: 'd1',
	call: '',
	fingerprint: 'f1',
	executionId: 'e1',
	resendUncertain: false,
};

const memo = (outcome: Outcome<StoredAnswer, StoredFailure>, executionId = 'e1'): Memo => ({
	...outcome,
	digest: 'd1',
	fingerprint: 'f1',
	executionId,
});

describe('decide', () => {
	it('sends what has no record, or a record of other parameters in an execution it retries', () => {
		expect(decide(undefined, asked)).toEqual({ action: 'send' });
		expect(
			decide(memo({ kind: 'generated', answer }), { ...asked, digest: 'd2', executionId: 'e2' }),
		).toEqual({ action: 'send' });
	});

	it('within one execution a digest that moved ($now, a random value) is the same item, another call id is not', () => {
		expect(decide(memo({ kind: 'generated', answer }), { ...asked, digest: 'd2' })).toEqual({
			action: 'replay',
			answer,
		});
		expect(
			decide(memo({ kind: 'generated', answer }), { ...asked, digest: 'd2', call: 'call_2' }),
		).toEqual({ action: 'send' });
	});

	it('asks for proof before returning what was generated under another key (or a record without one)', () => {
		const generated = memo({ kind: 'generated', answer });
		expect(decide(generated, { ...asked, fingerprint: 'f2' })).toEqual({
			action: 'prove',
			memo: generated,
		});
		const legacy = { ...generated, fingerprint: undefined };
		expect(decide(legacy, asked)).toEqual({ action: 'prove', memo: legacy });
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
		const outcome = (f: StoredFailure) => failureOutcome(f, f);
		expect(outcome(failure('timeout', 'may_have_been_charged')).kind).toBe('uncertain');
		expect(outcome(failure('internal_error', 'not_charged')).kind).toBe('refused');
		expect(outcome(failure('network_error', 'not_sent')).kind).toBe('refused');
	});

	it('a refusal passes another try only for the codes that a second try can get past', () => {
		const refused = (code: Code) =>
			decide(memo({ kind: 'refused', failure: failure(code, 'not_charged') }), asked).action;
		expect(refused('internal_error')).toBe('send');
		expect(refused('insufficient_credits')).toBe('report');
	});
});
