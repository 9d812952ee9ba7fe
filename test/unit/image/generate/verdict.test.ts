/**
 * The money path's one decision, as a table: for each thing known of an item (what the execution
 * remembers, the account check, what the durable record held before its claim), the verdict.
 */
import type {
	Memo,
	Outcome,
	StoredAnswer,
	StoredFailure,
} from '../../../../nodes/ImagePack/actions/image/generate/stores';
import {
	type Facts,
	type Recorded,
	failureKind,
	notSentError,
	verdict,
} from '../../../../nodes/ImagePack/actions/image/generate/verdict';
import type { Code } from '../../../../nodes/ImagePack/shared/codes';
import { errorFacts } from '../../../../nodes/ImagePack/shared/errors';

const failure = (code: Code | undefined, charge: StoredFailure['charge']): StoredFailure => ({
	code,
	requestId: 'req_1',
	charge,
	reason: 'what failed',
});
const answer = { body: { ok: true, turn_id: 't_1' }, status: 200, requestId: 'req_1' };
const memo = (outcome: Outcome<StoredAnswer, StoredFailure>, executionId = 'e1'): Memo => ({
	...outcome,
	digest: 'd1',
	occurrence: 0,
	fingerprint: 'f1',
	executionId,
});
const generated = memo({ kind: 'generated', answer });
const uncertain = (executionId = 'e1') =>
	memo(
		{ kind: 'uncertain', failure: failure('timeout', 'may_have_been_charged') },
		executionId,
	) as Memo & { kind: 'uncertain' };
const refused = (code: Code | undefined, executionId = 'e1') =>
	memo({ kind: 'refused', failure: failure(code, 'not_charged') }, executionId);

const base: Facts = {
	executionId: 'e1',
	fingerprint: 'f1',
	resendUncertain: false,
	record: 'run',
};
const none: Recorded = { sent: false, again: false, key: 'unused' };
const kind = (facts: Partial<Facts>) => {
	const result = verdict({ ...base, ...facts });
	if (result.kind === 'notSent') {
		const why = result.why as { code: string; by?: string };
		return `not sent: ${why.code}${why.by ? ` (${why.by})` : ''}`;
	}
	return 'claim' in result ? `${result.kind} ${result.claim}` : result.kind;
};

describe('verdict', () => {
	it.each<[string, Partial<Facts>, string]>([
		// Nothing remembered: the ledger decides.
		['nothing remembered', {}, 'claim fresh'],
		['nothing recorded before', { recorded: none }, 'send fresh'],
		[
			'a send of this run recorded before (n8n stopped)',
			{ recorded: { ...none, sent: true } },
			'not sent: interrupted_send (stop)',
		],
		[
			'…whatever the options: only a retry of the execution that reports it resends it',
			{ resendUncertain: true, recorded: { ...none, sent: true } },
			'not sent: interrupted_send (stop)',
		],
		[
			"the same, a tool call's window",
			{ record: 'tool', recorded: { ...none, sent: true } },
			'not sent: interrupted_send (tool)',
		],
		[
			'Resend on, nothing recorded before: a fresh send',
			{ resendUncertain: true, recorded: none },
			'send fresh',
		],
		[
			'an Idempotency Key used (on this account)',
			{ recorded: { ...none, key: 'used' } },
			'not sent: idempotency_key_used',
		],
		[
			'a key used, even with Resend on',
			{ resendUncertain: true, recorded: { ...none, key: 'used' } },
			'not sent: idempotency_key_used',
		],
		[
			'a key open (its run did not end: n8n stopped, or its send got no answer): reported, never called free',
			{ recorded: { ...none, key: 'open' } },
			'not sent: interrupted_send (key)',
		],
		[
			'…even with Resend on: the row that sent it resends it, not another',
			{ resendUncertain: true, recorded: { ...none, key: 'open' } },
			'not sent: interrupted_send (key)',
		],
		[
			'an earlier identical call of this execution may have been charged',
			{ earlierUncertain: uncertain() },
			'not sent: reported (call)',
		],
		// Generated: returned again, never sent again.
		['generated, this execution', { memo: generated }, 'replay'],
		['generated, the execution retried', { memo: generated, executionId: 'e2' }, 'replay'],
		[
			'generated, Resend on',
			{ memo: generated, executionId: 'e2', resendUncertain: true },
			'replay',
		],
		['generated under another key: proven first', { memo: generated, fingerprint: 'f2' }, 'prove'],
		[
			'another key, same account',
			{ memo: generated, fingerprint: 'f2', proof: { same: true, reason: '302' } },
			'replay',
		],
		[
			'another key, not confirmed',
			{ memo: generated, fingerprint: 'f2', proof: { same: false, reason: '404' } },
			'not sent: other_key',
		],
		[
			'…even with Resend on: reported first, resent by a retry of the execution that reports it',
			{
				memo: generated,
				fingerprint: 'f2',
				resendUncertain: true,
				proof: { same: false, reason: '404' },
			},
			'not sent: other_key',
		],
		// Uncertain: never sent again by the same execution; a retry only on the user's word, once.
		['uncertain, a try of this execution', { memo: uncertain() }, 'not sent: reported (try)'],
		[
			'uncertain, a try of this execution, Resend on',
			{ memo: uncertain(), resendUncertain: true },
			'not sent: reported (try)',
		],
		['uncertain, a retried execution', { memo: uncertain('e0') }, 'not sent: reported (retry)'],
		[
			'uncertain under another key (the credential changed since): other_key, nothing proves the account',
			{ memo: uncertain('e0'), fingerprint: 'f2' },
			'not sent: other_key',
		],
		[
			'…a retry of the execution that reported it, Resend on',
			{ memo: uncertain('e0'), fingerprint: 'f2', resendUncertain: true },
			'claim again',
		],
		[
			'uncertain, a retry with Resend on',
			{ memo: uncertain('e0'), resendUncertain: true },
			'claim again',
		],
		[
			'…not resent before',
			{ memo: uncertain('e0'), resendUncertain: true, recorded: none },
			'send again',
		],
		[
			'…resent by another retry already',
			{ memo: uncertain('e0'), resendUncertain: true, recorded: { ...none, again: true } },
			'not sent: interrupted_send (resend)',
		],
		[
			'…its own key, open, is no reason',
			{ memo: uncertain('e0'), resendUncertain: true, recorded: { ...none, key: 'open' } },
			'send again',
		],
		// Refused: a retried execution sends it; a try only when a second try can pass.
		['refused (500), a try of this execution', { memo: refused('internal_error') }, 'claim try'],
		[
			'…its own send left recorded (a release that failed) is no reason',
			{ memo: refused('internal_error'), recorded: { ...none, sent: true } },
			'send try',
		],
		[
			'…a key another item or execution used meanwhile is',
			{ memo: refused('internal_error'), recorded: { ...none, key: 'used' } },
			'not sent: idempotency_key_used',
		],
		[
			'refused (402), a try of this execution',
			{ memo: refused('insufficient_credits') },
			'not sent: reported (try)',
		],
		['refused with no code, a try', { memo: refused(undefined) }, 'not sent: reported (try)'],
		[
			'refused (402), a retried execution',
			{ memo: refused('insufficient_credits', 'e0') },
			'claim again',
		],
		[
			'…a leftover send of the refused attempt is no reason (its release failed)',
			{
				memo: { ...refused('insufficient_credits', 'e0'), left: true },
				recorded: { ...none, sent: true },
			},
			'send again',
		],
		[
			'…sent since by another retry of the same failed parent (the run shared): not sent',
			{ memo: refused('insufficient_credits', 'e0'), recorded: { ...none, sent: true } },
			'not sent: interrupted_send (retry)',
		],
		[
			'…another retry of the same execution sent it',
			{ memo: refused('insufficient_credits', 'e0'), recorded: { ...none, again: true } },
			'not sent: interrupted_send (retry)',
		],
		[
			'…the same, Resend on: once per saved record all the same',
			{
				memo: refused('insufficient_credits', 'e0'),
				resendUncertain: true,
				recorded: { ...none, again: true },
			},
			'not sent: interrupted_send (retry)',
		],
		[
			'…its key used since',
			{ memo: refused('insufficient_credits', 'e0'), recorded: { ...none, key: 'used' } },
			'not sent: idempotency_key_used',
		],
	])('%s', (_case, facts, expected) => {
		expect(kind(facts)).toBe(expected);
	});

	it('a refusal passes another try only for the codes a second try can get past', () => {
		const passes: Code[] = [
			'internal_error',
			'rate_limited',
			'network_error',
			'cancelled',
			'record_failed',
		];
		const stays: Code[] = [
			'invalid_request',
			'reference_image_missing',
			'unauthorized',
			'invalid_api_key',
			'insufficient_scope',
			'insufficient_credits',
			'session_not_found',
			'new_user_daily_limit',
			'credit_cap_reached',
		];
		for (const code of passes) expect(kind({ memo: refused(code) })).toBe('claim try');
		for (const code of stays)
			expect(kind({ memo: refused(code) })).toBe('not sent: reported (try)');
	});
});

describe('failureKind', () => {
	it('keeps what may have been charged apart from refusals', () => {
		expect(failureKind({ charge: 'may_have_been_charged' })).toBe('uncertain');
		expect(failureKind({ charge: 'not_charged' })).toBe('refused');
		expect(failureKind({ charge: 'not_sent' })).toBe('refused');
	});
});

describe('notSentError', () => {
	const node = {
		id: 'n',
		name: 'Generate',
		type: 't',
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
	} as never;
	const item = { itemIndex: 0, idempotencyKey: '' };

	it('an item reported interrupted_send before, reported again by a try or a repeat: the same words', () => {
		const stopped = notSentError(node, { code: 'interrupted_send', by: 'stop' }, item);
		const kept = {
			...failure('interrupted_send', 'may_have_been_charged'),
			reason: errorFacts(stopped).reason,
		};
		for (const by of ['try', 'call'] as const) {
			const again = notSentError(
				node,
				{ code: 'reported', by, memo: memo({ kind: 'uncertain', failure: kept }) as never },
				item,
			);
			expect(again.message).toBe(stopped.message);
			expect(again.message).toMatch(/^Not sent again: an earlier attempt that n8n did not finish/);
		}
	});

	it('a timeout reported again by a try: says an earlier try sent it', () => {
		const again = notSentError(node, { code: 'reported', by: 'try', memo: uncertain() }, item);
		expect(again.message).toMatch(
			/^Not sent again: an earlier try of this execution sent this generation/,
		);
	});
});
