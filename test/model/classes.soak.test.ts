/**
 * Written histories, run by the checker (history.ts) and judged by the model (promises.ts): one per
 * class of break of issue 56 (each named by the promise it breaks, numbered as in
 * test/model/README.md), and the breaks of issue 49 that still apply. A history the code as it is
 * breaks is `it.failing`, with the promise named: flip it to `it` when the fix lands. Those of
 * issue 56's list failed on a26fc8c and pass since a7e6a45; those under "found on a7e6a45" were
 * found there by the generator (shrunk by hand).
 *
 * The interrupts here are placed by the harness's own landmarks (the n-th request to the service,
 * after the node finished) where they can be, so that they keep their meaning when the node's store
 * calls change; those placed at a store call's number say what the call was when written.
 */
import { useEmulator } from '../harness/emulator';
import {
	NewExecution,
	Restart,
	RetryAfterKill,
	RetryExecution,
	type RunSpec,
	runHistory,
} from './history';
import type { Row } from './promises';

const emulator = useEmulator();

const row = (text: string): Row => ({
	product: text.split('/')[0],
	account: text.split('/')[1] as Row['account'],
});
const spec = (runs: string[][], more: Partial<RunSpec> = {}): RunSpec => ({
	runs: runs.map((rows) => rows.map(row)),
	concurrency: 1,
	onError: 'stop',
	resend: false,
	credential: 'fixed',
	asTool: false,
	...more,
});
const retry = { reorder: false, crashRecovered: false, repeatCall: false };
/** n8n killed once the `n`-th request (0-based) of the execution was charged, its answer not yet back. */
const killAfterCharge = (skip: number) =>
	({ kind: 'killAt', route: 'generate', skip, when: 'after' }) as const;
/** n8n killed after the node finished, before it saved the execution. */
const killAfterNode = { kind: 'kill', at: 999 } as const;

describe('issue 56', () => {
	describe('1. Clear Idempotency Key is gone: a used key is never sent again', () => {
		it('a saved workflow still carrying Clear Idempotency Key: the key is not paid again', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A']]), []),
				new NewExecution(spec([['k0/A']], { legacyClear: true, onError: 'errorOutput' }), []),
			]);
		});

		it('Clear left on in a saved workflow, retried after a kill: the key is not paid again', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A', 'p0/A']], { legacyClear: true }), [], killAfterCharge(1)),
				new RetryAfterKill(0, { ...retry, edit: { legacyClear: true } }, []),
			]);
		});
	});

	describe("2. a key is the account's", () => {
		// Issue class 7: two sellers, one SKU, the README's own key under a per-seller credential.
		it('one key under two accounts: two generations, each paid once', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					spec([['k0/A', 'k0/B']], { credential: 'perItem', onError: 'errorOutput' }),
					[],
				),
			]);
		});

		it('one key paid on A, then asked on B by a new execution: generated, not refused', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A']]), []),
				new NewExecution(spec([['k0/B']], { credential: 'perItem', onError: 'errorOutput' }), []),
			]);
		});

		// Issue 56's hidden case: a keyed row answered, n8n killed while Generate still runs (at the
		// next row's send), a new execution with the key: the key is open, never "used, not sent".
		it('a key answered, n8n killed at the next row: a new execution reports it may have been charged', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A', 'p0/A']]), [], killAfterCharge(1)),
				new NewExecution(spec([['k0/A']], { onError: 'errorOutput' }), []),
			]);
		});

		it('a key refused by the service (a refunded 500) is not used up: the next execution sends it', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A']], { onError: 'errorOutput' }), [
					{ product: 'k0', kind: 'refund500', skip: 0 },
				]),
				new NewExecution(spec([['k0/A']]), []),
			]);
		});
	});

	describe('3. Resend Uncertain Generations is one explicit act', () => {
		// Issue class 2: left on, a new execution resends a key left open by a lost answer.
		it('a new execution with Resend on never resends a key left open by a kill', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A']]), [], killAfterCharge(0)),
				new NewExecution(spec([['k0/A']], { resend: true, onError: 'errorOutput' }), []),
			]);
		});

		it('a retry of a killed execution (no saved record) never resends, Resend on or not', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A']]), [], killAfterCharge(0)),
				new RetryAfterKill(0, { ...retry, edit: { resend: true } }, []),
			]);
		});

		// Issue class 6: the retry fails at the first item that left; the user turns Resend on and
		// retries that retry; the second item that left, never reported, must not be sent again.
		it('the Stop Workflow flow: an item the retried execution never reported is never resent', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A']]), [], killAfterNode),
				new RetryAfterKill(0, retry, []),
				new RetryExecution(0, { resend: true }, []),
			]);
		});

		it('the documented flow: a retry reports interrupted_send, its retry with Resend resends it once', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A']]), [], killAfterCharge(0)),
				new RetryAfterKill(0, retry, []),
				new RetryExecution(0, { resend: true }, []),
			]);
		});

		it('two retries of one failed execution with Resend on: only one resends', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A']]), [
					{ product: 'p0', kind: 'resetAfter', skip: 0 },
				]),
				new RetryExecution(0, { resend: true }, [{ product: 'p1', kind: 'credits402', skip: 0 }]),
				new RetryExecution(0, { resend: true }, []),
			]);
		});

		it('a Retry On Fail try never resends, Resend on', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A']], { tries: 3, resend: true }), [
					{ product: 'p0', kind: 'resetAfter', skip: 0 },
				]),
			]);
		});
	});

	describe('4. a result goes only to a row of the account that paid for it', () => {
		// Issue class 3: a run on one fixed key, retried with a per-seller credential.
		it("a fixed-key run retried with the per-seller credential: B's row is not given A's image", async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p0/B', 'p1/A']]), [
					{ product: 'p1', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, { credential: 'perItem' }, []),
			]);
		});

		// Promise 2 as well: B's keyed row refused `idempotency_key_used` for a key paid on A only.
		it("a keyed fixed-key run retried with the per-seller credential: B's keyed row is not given A's image, nor refused", async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A', 'k0/B', 'p1/A']]), [
					{ product: 'p1', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, { credential: 'perItem' }, []),
			]);
		});

		// Found by story 5 (seed 49, histories 7 and 64): A's twin row, refused `idempotency_key_used`
		// under A's second key, is sent by the retry under A's first. Kept, and the README says so:
		// the node knows a key by its API key ("a key used under a replaced API key is new to its
		// replacement"); the model allows one paid turn per API key.
		it("a keyed run on a new key of account A retried with A's first key: the twin row is sent once more, once", async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A', 'k0/B', 'p1/A']], { credential: 'second' }), [
					{ product: 'p1', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, { credential: 'fixed', onError: 'errorOutput' }, []),
			]);
		});

		// A proof is per pair of keys: A's row proves A's second key against A's first; B's row,
		// asked next, must not take that proof (mutant (g), test/model/README.md).
		it("a run on a new key of account A retried with the per-seller credential: A's row is proven and returned, B's row is not given A's image", async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p0/B', 'p1/A']], { credential: 'second' }), [
					{ product: 'p1', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, { credential: 'perItem' }, []),
			]);
		});
	});

	describe('5. an item paid and then stopped is never reported not_sent', () => {
		// Issue class 4: Stop during the downloads (Concurrency 1 downloads after the last generation).
		it("the user's Stop during the downloads: the generated items keep their result or their charge", async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A', 'k0/A']], { download: true }), [], {
					kind: 'stopAt',
					route: 'file',
					skip: 0,
					when: 'before',
				}),
			]);
		});

		it("the user's Stop while the service generates (charged, the answer not back)", async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A']]), [], {
					kind: 'stopAt',
					route: 'generate',
					skip: 1,
					when: 'after',
				}),
			]);
		});

		it('a Stop during the downloads, then the stopped execution retried: its generations returned, nothing paid twice', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A'], ['k0/A']], { download: true }), [], {
					kind: 'stopAt',
					route: 'file',
					skip: 0,
					when: 'before',
				}),
				new RetryExecution(0, undefined, []),
			]);
		});

		it('a timeout after the charge: reported may_have_been_charged', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A']], { timeout1: true, tries: 2 }), [
					{ product: 'p0', kind: 'timeoutAfter', skip: 0 },
				]),
			]);
		});

		it('a failed download: the generation keeps its result', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A']], { download: true }), [
					{ product: 'p0', kind: 'download500', skip: 0 },
				]),
				new NewExecution(spec([['p0/A']], { download: true }), []),
			]);
		});
	});

	describe('6. caps hold across kills and retries', () => {
		// Issue class 5: cap 36, killed after 36 credits, the retry spends more.
		it('Max Credits per Execution 36, killed after three paid items: the retry pays nothing more', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					spec([['p0/A', 'p1/A', 'k0/A', 'k1/A']], {
						maxPerExecution: 36,
						onError: 'errorOutput',
					}),
					[],
					killAfterCharge(2),
				),
				new RetryAfterKill(0, retry, []),
			]);
		});

		it('Max Credits per Execution across a failed execution and its retry with the cap lowered', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p1/A', 'k0/A']], { maxPerExecution: 36 }), [
					{ product: 'k0', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, { maxPerExecution: 24 }, []),
			]);
		});

		it('Max Credits per Item below the price: nothing is sent', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'k0/A']], { maxPerItem: 11, onError: 'errorOutput' }), []),
			]);
		});
	});

	describe('7. nothing paid twice, nothing refused that never left, every charge label true', () => {
		it('a refused item (a refunded 500) is sent again by the next Executions → Retry', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A', 'p0/A']]), [{ product: 'p0', kind: 'refund500', skip: 0 }]),
				new RetryExecution(0, undefined, []),
			]);
		});

		it('a generated item of a failed execution is returned by its retry, not sent', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'k0/A', 'p1/A']]), [
					{ product: 'p1', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, undefined, []),
			]);
		});

		it('new work is never refused: the same rows again as a new execution are paid again', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['p0/A', 'p0/B']], { credential: 'perItem' }), []),
				new NewExecution(spec([['p0/A', 'p0/B']], { credential: 'perItem' }), []),
			]);
		});

		it('Concurrency 8 killed with sends in flight: the retry refuses at most a wave', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					spec([['p0/A', 'p1/A', 'p0/B', 'k0/A']], { concurrency: 8, credential: 'perItem' }),
					[],
					killAfterCharge(1),
				),
				new RetryAfterKill(0, { ...retry, reorder: true }, []),
			]);
		});

		it('a lost answer retried after a restart, reported, then resent once with Resend', async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(spec([['k0/A', 'p0/A']], { onError: 'errorOutput' }), [
					{ product: 'k0', kind: 'resetAfter', skip: 0 },
				]),
				new Restart(),
				new NewExecution(spec([['k0/A']], { onError: 'errorOutput' }), []),
			]);
		});
	});
});

describe('issue 49 (still promised)', () => {
	it("an agent call answered, killed, retried: the model's repeat is not paid again", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A']], { asTool: true }), [], killAfterNode),
			new RetryAfterKill(0, { ...retry, repeatCall: true }, []),
		]);
	});

	it("identical asks of two accounts, killed after A's send, rows reordered on the retry", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p0/A', 'p0/B']], { credential: 'perItem', onError: 'errorOutput' }),
				[],
				killAfterCharge(0),
			),
			new RetryAfterKill(0, { ...retry, reorder: true }, []),
		]);
	});

	it("a 402 on the agency's key, retried with the per-seller credential", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A', 'p1/B', 'p2/B']]), [
				{ product: 'p1', kind: 'credits402', skip: 0 },
			]),
			new RetryExecution(0, { credential: 'perItem' }, []),
		]);
	});

	it("(n8n's window) the node finished, n8n stopped before saving: the next run's idempotency_key_used is allowed", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['k0/A']]), [], killAfterNode),
			new NewExecution(spec([['k0/A']], { onError: 'errorOutput' }), []),
			new RetryAfterKill(0, retry, []),
		]);
	});

	// Promise 3: the killed execution saved no record, and the retry that sent the row reported it
	// generated; today a retry of the killed one with Resend on resends it.
	it('a crashed loop execution retried (its row refused once, then sent), then twice with Resend: nothing resent (no saved record reported it)', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A']], { tries: 2 }), [], { kind: 'kill', at: 1 }),
			new RetryAfterKill(0, { ...retry, aim: true }, []),
			new RetryAfterKill(0, { ...retry, edit: { resend: true } }, []),
			new RetryAfterKill(0, { ...retry, edit: { resend: true } }, []),
		]);
	});

	it("a killed execution's retry refused, that retry retried and delivered, the original retried again: not paid again", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A']]), [], { kind: 'kill', at: 1 }),
			new RetryAfterKill(0, retry, [{ product: 'p0', kind: 'refund500', skip: 0 }]),
			new RetryExecution(0, undefined, []),
			new RetryAfterKill(0, retry, []),
		]);
	});

	it('an agent call refused (a refunded 500), n8n killed before its claim was let go: the retry reports it', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p0/A']], { asTool: true }),
				[{ product: 'p0', kind: 'refund500', skip: 0 }],
				{
					kind: 'killBefore',
					at: 3,
				},
			),
			new RetryAfterKill(0, retry, []),
		]);
	});

	it("a retry's first row refused: its next try sends the rows never reached", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A', 'p1/A']], { tries: 2 }), [], { kind: 'killBefore', at: 3 }),
			new RetryAfterKill(0, { ...retry, aim: true }, []),
		]);
	});

	it("another process finds an agent call's key open while this one is between its claim and its send", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p0/A'], ['k0/A']], { tries: 2, asTool: true }),
				[{ product: 'p0', kind: 'refund500', skip: 0 }],
				{
					kind: 'pause',
					at: 5,
					other: spec([['k0/A']], { asTool: true }),
				},
			),
		]);
	});
});

describe('found on a7e6a45 by the generator (seeds 49 and 78845481, shrunk by hand)', () => {
	// Promise 5: n8n's Retry On Fail runs the next try after the Stop; that try reported the item
	// `cancelled` / `not_sent`, though the first try's request was charged (passes since 6e9dccd).
	it("5. the user's Stop while the service generates, Retry On Fail on: the charged item is not reported not_sent", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A']], { tries: 2 }), [], {
				kind: 'stopAt',
				route: 'generate',
				skip: 0,
				when: 'after',
			}),
		]);
	});

	// Promise 3: with Concurrency 8, one product under two accounts, the retry failed at A's row;
	// its retry with Resend resent B's row too, which no saved record reported (passes since
	// 4078553: the retry names every such item).
	it('3. Concurrency 8, one prompt under two accounts: the row the retried execution never reported is not resent', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p0/A', 'p0/B']], { concurrency: 8, credential: 'perItem' }),
				[],
				killAfterNode,
			),
			new RetryAfterKill(0, retry, []),
			new RetryExecution(0, { resend: true }, []),
		]);
	});

	// Promise 6: the killed attempt paid 24 on A's key; the retry, its rows now on B's key, pays 24
	// more under a cap of 24. Decided by the README's sentence (not the code): a retry whose
	// credential was switched after the stop finds nothing the stopped attempt sent, and counts
	// anew; the cap rule counts earlier attempts under the same credential setting.
	it("6. Max Credits per Execution across a kill and a credential switched to the rows' accounts", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p0/B', 'p1/B', 'k0/B']], { maxPerExecution: 24, onError: 'errorOutput' }),
				[],
				killAfterCharge(1),
			),
			new RetryAfterKill(0, { ...retry, edit: { credential: 'perItem' } }, []),
		]);
	});

	// Promise 2: a key claimed and sent by a run not ended (its send held before the service) is
	// open: another execution reports it `interrupted_send`, not `idempotency_key_used` / `not_sent`
	// (passes since 6e9dccd).
	it('2. a key open in another run (its send in flight): may have been charged, not "used"', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['k0/A']]), [], {
				kind: 'hold',
				product: 'k0',
				other: spec([['k0/A']], { onError: 'errorOutput' }),
			}),
		]);
	});
});

describe('found on eebeadc by the generator (seed 49, shrunk by hand)', () => {
	// Promise 5: under Continue the stopped run's output lacked the item whose request the Stop cut
	// after the service charged it: neither its result nor `may_have_been_charged` (passes on 5ae8027).
	it("5. the user's Stop while the service generates, On Error Continue: the charged item is reported", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['k3/A', 'p0/A', 'k5/A']], { onError: 'continue', download: true }),
				[],
				{
					kind: 'stopAt',
					route: 'generate',
					skip: 1,
					when: 'after',
				},
			),
		]);
	});
});

describe('found on 5ae8027 by the generator (seed 49, shrunk by fast-check)', () => {
	// Promise 7 (nothing refused that never left): a fixed-key run's two rows of one product, killed;
	// its retry (the first row refused once) fails; that retry retried with the per-seller
	// credential reports B's row `interrupted_send`, though nothing was ever sent on B's key. Passes
	// since an uncertain record made under another key is reported `other_key`.
	it("7. a row moved to another account's key by the retry's credential is not refused as sent", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/B', 'p0/A']], { tries: 2 }), [], { kind: 'kill', at: 5 }),
			new RetryAfterKill(0, { ...retry, aim: true }, []),
			new RetryExecution(0, { credential: 'perItem' }, []),
		]);
	});
});

describe('found on 8ec2504 by the generator (seed 49, history 125)', () => {
	// Promise 7 (every charge label true): the user's Stop once k0's claim was written (store call 4
	// at 8ec2504), before its send: k0 is reported `cancelled` / `may_have_been_charged`, though no
	// request left for it (a Stop is no kill: the node knows it did not send). Passes since the
	// transport says a request stopped before it left is not_sent.
	it("7. the user's Stop between a claim and its send: not reported may_have_been_charged", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['k0/B', 'p1/A', 'k3/A']], {
					tries: 2,
					onError: 'errorOutput',
					resend: true,
					maxPerExecution: 24,
				}),
				[],
				{ kind: 'stop', at: 4 },
			),
		]);
	});
});

describe('found by seed 49 at 8ec2504 and after', () => {
	// refused, never sent: k2 on B in execution #22 (retryExecution of #20) reported interrupted_send (may_have_been_charged) with no request for it that the service did not refuse (1 > 0 in all the kills' windows allow)
	it("7. a keyed row moved to another account by the retry's credential: reported other_key (an uncertain record made under another key), not interrupted_send", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				{
					concurrency: 1,
					tries: 3,
					onError: 'stop',
					resend: false,
					legacyClear: false,
					download: false,
					maxPerExecution: 24,
					maxPerItem: 0,
					credential: 'fixed',
					asTool: false,
					runs: [
						[{ product: 'k2', account: 'B' }],
						[
							{ product: 'p1', account: 'A' },
							{ product: 'p1', account: 'A' },
						],
						[
							{ product: 'p0', account: 'B' },
							{ product: 'k0', account: 'A' },
						],
					],
				},
				[{ product: 'k0', kind: 'resetAfter', skip: 1 }],
				{ kind: 'kill', at: 13 },
			),
			new RetryAfterKill(
				0,
				{
					reorder: false,
					crashRecovered: false,
					repeatCall: false,
					edit: { resend: false, legacyClear: false },
					aim: true,
				},
				[
					{ product: 'p0', kind: 'credits402', skip: 0 },
					{ product: 'k1', kind: 'timeoutAfter', skip: 0 },
				],
				undefined,
			),
			new RetryExecution(
				8,
				{ legacyClear: true, credential: 'perItem', maxPerExecution: 0, onError: 'stop' },
				[
					{ product: 'k0', kind: 'credits402', skip: 1 },
					{ product: 'p1', kind: 'refund500', skip: 0 },
				],
				{ kind: 'stopAt', route: 'generate', skip: 3, when: 'before' },
			),
		]);
	});

	// paid reported free (fixed at 6443455's successor): k0/B paid in try 1, whose output n8n dropped
	// to try again (Retry On Fail, the first item an error item under Continue); its open mark was
	// taken out at the end of try 1 and try 2 was killed: the retry reported the key used and free.
	it('2. a key paid in a try whose output n8n dropped, the next try killed: the retry reports it open, not idempotency_key_used / not_sent', async () => {
		await runHistory(emulator, 'scaled', [
			new NewExecution(
				{
					concurrency: 1,
					tries: 2,
					onError: 'continue',
					resend: false,
					legacyClear: false,
					download: true,
					maxPerExecution: 36,
					maxPerItem: 0,
					credential: 'perItem',
					asTool: false,
					runs: [
						[
							{ product: 'k0', account: 'A' },
							{ product: 'k0', account: 'B' },
							{ product: 'p1', account: 'A' },
						],
						[
							{ product: 'k2', account: 'B' },
							{ product: 'k0', account: 'B' },
						],
					],
				},
				[{ product: 'k0', kind: 'resetAfter', skip: 0 }],
				{ kind: 'killAt', route: 'file', skip: 2, when: 'after' },
			),
			new RetryAfterKill(
				0,
				{ reorder: false, crashRecovered: false, repeatCall: false, edit: { resend: false } },
				[],
				undefined,
			),
		]);
	});

	// refused for a key never paid (fixed at 6443455's successor): k1 on A open in a held tool call;
	// another execution's three k1 rows claimed at once, the first found it open and held it, so its
	// twins took it for their own and reported it used.
	it('2. a key open in a held tool call, three rows of it in another execution: each reported open (interrupted_send), none idempotency_key_used', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				{
					concurrency: 8,
					tries: 2,
					onError: 'stop',
					resend: true,
					legacyClear: false,
					download: true,
					maxPerExecution: 0,
					maxPerItem: 0,
					credential: 'perItem',
					asTool: false,
					runs: [
						[
							{ product: 'p0', account: 'A' },
							{ product: 'p0', account: 'B' },
							{ product: 'p1', account: 'A' },
						],
						[
							{ product: 'k0', account: 'A' },
							{ product: 'p1', account: 'B' },
							{ product: 'p1', account: 'A' },
						],
					],
				},
				[],
				{ kind: 'stopAt', route: 'generate', skip: 3, when: 'after' },
			),
			new NewExecution(
				{
					concurrency: 8,
					tries: 2,
					onError: 'stop',
					resend: false,
					legacyClear: false,
					download: true,
					maxPerExecution: 0,
					maxPerItem: 0,
					credential: 'perItem',
					asTool: false,
					runs: [
						[
							{ product: 'p0', account: 'A' },
							{ product: 'p0', account: 'B' },
							{ product: 'p1', account: 'A' },
						],
						[
							{ product: 'k0', account: 'A' },
							{ product: 'p1', account: 'B' },
							{ product: 'p1', account: 'A' },
						],
					],
				},
				[],
				undefined,
			),
			new RetryExecution(
				0,
				{ resend: true },
				[{ product: 'p1', kind: 'credits402', skip: 0 }],
				undefined,
			),
			new RetryExecution(0, { resend: true }, [], undefined),
			new NewExecution(
				{
					concurrency: 1,
					tries: 2,
					onError: 'continue',
					resend: true,
					legacyClear: false,
					download: true,
					maxPerExecution: 0,
					maxPerItem: 0,
					credential: 'perItem',
					asTool: true,
					runs: [
						[{ product: 'p0', account: 'A' }],
						[{ product: 'k1', account: 'A' }],
						[{ product: 'k1', account: 'A' }],
					],
				},
				[],
				{
					kind: 'hold',
					product: 'k1',
					other: {
						concurrency: 8,
						tries: 3,
						onError: 'continue',
						resend: false,
						legacyClear: false,
						download: true,
						maxPerExecution: 36,
						maxPerItem: 0,
						credential: 'fixed',
						asTool: false,
						runs: [
							[
								{ product: 'p1', account: 'A' },
								{ product: 'k1', account: 'A' },
								{ product: 'p0', account: 'A' },
								{ product: 'k2', account: 'A' },
							],
							[
								{ product: 'k1', account: 'A' },
								{ product: 'k1', account: 'B' },
								{ product: 'k1', account: 'B' },
							],
						],
					},
				},
			),
		]);
	});
});

describe('found at 6443455 by the commit seed 222602566 and seed 1002 (fixed since)', () => {
	// cap passed: two retries of one stopped execution with Resend: the second counted neither the
	// first's resend (reported interrupted_send by 'resend') nor its key (open, by 'key'), and sent more.
	it('6. two retries of one stopped execution under Max Credits per Execution: the second counts what the first sent', async () => {
		await runHistory(emulator, 'scaled', [
			new NewExecution(
				spec([['k0/A', 'k0/B', 'p1/A']], {
					tries: 2,
					download: false,
					maxPerExecution: 36,
					credential: 'perItem',
					timeout1: true,
				}),
				[{ product: 'k0', kind: 'timeoutAfter', skip: 0 }],
				{ kind: 'stopAt', route: 'generate', skip: 2, when: 'after' },
			),
			new RetryExecution(
				0,
				{ resend: true },
				[{ product: 'p1', kind: 'credits402', skip: 0 }],
				undefined,
			),
			new RetryExecution(0, { resend: true }, [], undefined),
		]);
	});

	// cap passed, paid twice: the first retry's paid sends waited in this process's queue to move to
	// the node's row; the second retry read that row, then the move took them out of the claims' row
	// before its claims: they were found nowhere and sent again.
	it('1. two retries of one killed execution in one process: the second finds what the first paid, moved or not', async () => {
		await runHistory(emulator, 'scaled', [
			new NewExecution(
				spec([['p0/A', 'p1/A']], { maxPerExecution: 24, credential: 'perItem', resend: true }),
				[],
				killAfterCharge(1),
			),
			new RetryAfterKill(0, { ...retry, reorder: true, repeatCall: true }, [
				{ product: 'p1', kind: 'credits402', skip: 1 },
			]),
			new RetryAfterKill(
				0,
				{ ...retry, crashRecovered: true, edit: { resend: false, onError: 'stop' } },
				[
					{ product: 'k0', kind: 'credits402', skip: 1 },
					{ product: 'p0', kind: 'timeoutAfter', skip: 1 },
				],
				{
					kind: 'pause',
					at: 2,
					other: spec([['k1/B', 'k1/B']], { tries: 3, maxPerItem: 11 }),
				},
			),
		]);
	});

	it('6. a retry of a killed loop and a second retry of it, the cap lowered on the first: the family stays under the cap', async () => {
		await runHistory(emulator, 'scaled', [
			new NewExecution(
				spec(
					[
						['p1/B', 'p1/B', 'p0/B', 'k0/B'],
						['k0/A', 'k2/B', 'p1/B', 'k0/A'],
						['p0/A', 'k1/B'],
					],
					{ tries: 2, maxPerExecution: 36, credential: 'perItem' },
				),
				[{ product: 'p1', kind: 'resetAfter', skip: 1 }],
				{ kind: 'killBefore', at: 3 },
			),
			new RetryAfterKill(
				0,
				{
					...retry,
					reorder: true,
					crashRecovered: true,
					edit: { resend: true, maxPerExecution: 24 },
					aim: true,
				},
				[{ product: 'p0', kind: 'resetAfter', skip: 1 }],
			),
			new RetryAfterKill(0, { ...retry, edit: { resend: true, onError: 'continue' }, aim: true }, [
				{ product: 'k0', kind: 'credits402', skip: 0 },
				{ product: 'k0', kind: 'resetAfter', skip: 0 },
			]),
		]);
	});

	// refused for a key never paid: a row of k1 claimed its key, then Max Credits per Execution
	// refused it; its twin, claimed in the same store call, took the key for used by its execution.
	it('2. a keyed row the cap refuses claims nothing: its twin in the batch is not told idempotency_key_used', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p1/B', 'p0/A', 'k1/B', 'k1/A'], ['k1/B', 'k0/A'], ['k5/B']], {
					concurrency: 8,
					tries: 2,
					onError: 'continue',
					maxPerExecution: 24,
				}),
				[],
			),
		]);
	});

	// generated not returned (seed 7): under Stop Workflow a lost answer stopped the run while a
	// row's request was in flight; the run's error named only the first, and the retry with Resend
	// sent the other again.
	it('3. Stop Workflow, concurrency 8, the user stops: the retry with Resend resends only what the run named', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['k0/A', 'k0/B', 'p1/A'], ['k2/A']], {
					concurrency: 8,
					resend: true,
					credential: 'perItem',
				}),
				[{ product: 'k0', kind: 'resetAfter', skip: 0 }],
				{ kind: 'stopAt', route: 'generate', skip: 0, when: 'before' },
			),
			new RetryExecution(0, { resend: true }, [{ product: 'p1', kind: 'credits402', skip: 0 }]),
		]);
	});

	// cap passed (seed 7): n8n killed after the node ran (before it saved), its sends still in the
	// claims' row; the retry, rows reversed, sent its first row before its claims found the others
	// sent by the killed attempt: their estimates counted too late. Held now: under a cap a retry
	// asks the claims' row, a wave of lanes at a time, before its first send.
	it('6. Max Credits per Execution 24, killed after the node before n8n saved, retried with the rows reversed: the family passes the cap', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec(
					[
						['k0/A', 'k1/A', 'k1/B'],
						['k0/B', 'k0/B', 'k1/A', 'p1/A'],
						['k1/A', 'p0/A'],
					],
					{
						tries: 3,
						download: true,
						maxPerExecution: 24,
						credential: 'perItem',
					},
				),
				[{ product: 'p0', kind: 'download500', skip: 1 }],
				{ kind: 'kill', at: 7 },
			),
			new RetryAfterKill(
				0,
				{
					...retry,
					reorder: true,
					edit: { credential: 'perItem', maxPerExecution: 24 },
					aim: true,
				},
				[
					{ product: 'k1', kind: 'credits402', skip: 0 },
					{ product: 'k1', kind: 'download500', skip: 1 },
				],
			),
		]);
	});

	// paid reported free (seed 49, history 31, after the twin rule above): a retry with the
	// credential switched to A found B's generated row's key among the keys its memory paid.
	it('2. a retry with the credential switched: a memory of a generation under another key is no key this execution paid', async () => {
		await runHistory(emulator, 'scaled', [
			new NewExecution(
				spec([['k0/A', 'k0/B'], ['k0/A', 'p0/B', 'p1/B', 'p1/A'], ['p1/B']], {
					tries: 3,
					resend: true,
					maxPerExecution: 36,
					credential: 'perItem',
					timeout1: true,
				}),
				[{ product: 'k0', kind: 'timeoutAfter', skip: 0 }],
				killAfterCharge(1),
			),
			new NewExecution(
				spec([['k0/A', 'k0/B'], ['k0/A', 'p0/B', 'p1/B', 'p1/A'], ['p1/B']], {
					tries: 3,
					resend: true,
					maxPerExecution: 36,
					credential: 'perItem',
					timeout1: true,
				}),
				[],
			),
			new RetryExecution(0, { resend: true, credential: 'fixed', maxPerExecution: 0 }, [], {
				kind: 'stopAt',
				route: 'file',
				skip: 1,
				when: 'before',
			}),
		]);
	});

	// refused for a key never paid (seeds 137808948 and 5): two rows of one key at Concurrency 8;
	// the second found the first's claim in flight and was told idempotency_key_used, then the
	// service refused the first (a refunded 500): the key was never paid, yet its second row was
	// refused. Held now: a twin waits for the outcome of the claim it found in flight.
	it('2. a twin row told idempotency_key_used while its twin is in flight, then the twin refused: the key never paid', async () => {
		await runHistory(emulator, 'scaled', [
			new NewExecution(
				spec([['k4/A', 'p0/A', 'k4/A']], { concurrency: 8, credential: 'perItem' }),
				[{ product: 'k4', kind: 'refund500', skip: 0 }],
			),
		]);
	});

	// cap passed (seed 11, history 38): a killed run without a cap paid 36; its retry, capped at 24,
	// was stopped before it reported what the killed run sent (its ledger counted nothing), and the
	// retry of that retry, capped at 36, paid 24 more.
	it('6. a retry under a cap stopped before it reported what the killed run sent: its retry still counts it', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec(
					[
						['p1/A', 'p0/A', 'k0/B', 'p1/A'],
						['p1/A', 'k5/B'],
					],
					{
						tries: 3,
						onError: 'continue',
						resend: true,
						credential: 'perItem',
					},
				),
				[],
				{ kind: 'killAt', route: 'generate', skip: 3, when: 'before' },
			),
			new Restart(),
			new RetryAfterKill(
				0,
				{
					...retry,
					reorder: true,
					repeatCall: true,
					edit: {
						resend: true,
						credential: 'perItem',
						maxPerExecution: 24,
						onError: 'errorOutput',
					},
				},
				[
					{ product: 'k0', kind: 'refund500', skip: 0 },
					{ product: 'k0', kind: 'resetAfter', skip: 1 },
				],
				{ kind: 'stop', at: 3 },
			),
			new RetryExecution(0, { resend: true, maxPerExecution: 36 }, [
				{ product: 'k1', kind: 'resetAfter', skip: 1 },
			]),
		]);
	});

	// refused, never sent (seed 183264868, history 250, a false alarm): the user's Stop caught a
	// lane's send as it left, before the service logged it; the run, which now names every item
	// that may have been charged, named it. The model allows a wave of lanes per Stop.
	it("7. the user's Stop as a lane's send leaves (Concurrency 8): reported maybe charged, within a wave", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec(
					[
						['k1/A', 'p1/A', 'k1/B', 'k1/A'],
						['p1/B', 'p1/A'],
						['k2/A', 'p1/B', 'k2/B'],
					],
					{ concurrency: 8, tries: 3, download: true, credential: 'perItem' },
				),
				[],
				{ kind: 'stop', at: 6 },
			),
		]);
	});

	// cap passed (the fresh seed 157011033 of 95bcc59, open): a capped loop killed after both
	// batches sent; its retry reports the first batch's row and fails there (Stop Workflow); the
	// retry of that retry with Resend resends it within the cap it knows, then meets the second
	// batch's row, sent by the killed run: the family passes the cap. What later batches of a killed
	// run sent is unknown to the retry's earlier batches; closing it needs the run's spend in the
	// durable record.
	it.failing(
		'6. Max Credits per Execution over a killed loop: a resend in the first batch before the second batch shows what the kill sent',
		async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					spec([['k0/A'], ['k3/A']], { concurrency: 8, resend: true, maxPerExecution: 24 }),
					[],
					{ kind: 'killBefore', at: 8 },
				),
				new RetryAfterKill(0, { ...retry, edit: { resend: true } }, []),
				new RetryExecution(0, { resend: true }, []),
			]);
		},
	);

	// Found by the fresh seed 1003 at ef04e9f (histories 354, 497 and 100 of 600), open. Not shrunk
	// further: each replays as generated.

	// paid twice: a failed execution run on account A's second key, retried per row (A's row sent
	// under A's first key), then retried again with the original workflow (A's second key): the
	// second retry does not find what the first sent under the other API key of the same account.
	it.failing(
		'3. the same failed execution retried twice under two API keys of one account: the refused row is paid twice',
		async () => {
			await runHistory(emulator, 'scaled', [
				new NewExecution(spec([['p0/A', 'p0/B', 'p1/A']], { credential: 'second' }), [
					{ product: 'p1', kind: 'credits402', skip: 0 },
				]),
				new RetryExecution(0, { credential: 'perItem', onError: 'stop' }, []),
				new RetryExecution(4, undefined, [{ product: 'k0', kind: 'refund500', skip: 0 }]),
			]);
		},
	);

	// refused, never sent: a three-batch loop retried under Continue, killed before its 4th store
	// call, then that retry's kill retried with crash recovery's run indexes while two store calls
	// fail (a busy database): k3 on B is reported maybe charged twice with one request.
	it.failing(
		'7. a killed retry retried with crash-recovered run indexes and a busy database: a key reported maybe charged beyond the kill windows',
		async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					spec([['k1/B', 'p0/A'], ['p0/A', 'k3/B', 'p1/B'], ['k3/B']], {
						tries: 2,
						resend: true,
						download: true,
						maxPerExecution: 36,
						credential: 'perItem',
					}),
					[],
				),
				new RetryExecution(
					2,
					{ resend: true, credential: 'perItem', maxPerExecution: 24, onError: 'continue' },
					[],
					{ kind: 'killBefore', at: 4 },
				),
				new RetryAfterKill(
					1,
					{
						...retry,
						crashRecovered: true,
						edit: { resend: true, credential: 'perItem', maxPerExecution: 24, onError: 'stop' },
						aim: false,
					},
					[{ product: 'p1', kind: 'download500', skip: 0 }],
					{ kind: 'busy', at: 5, times: 2 },
				),
			]);
		},
	);

	// cap passed: a capped two-batch run killed at its first store call after a lost answer, its
	// kill retried twice (Resend off, then on), then retried again with Resend: 48 credits under a
	// cap of 36. Likely the open class above (what a killed run sent is learned batch by batch).
	it.failing(
		'6. Max Credits per Execution over a kill retried three times, Resend on the last two',
		async () => {
			await runHistory(emulator, 'scaled', [
				new NewExecution(
					spec([['p0/A', 'p0/B'], ['k1/B']], {
						tries: 3,
						legacyClear: true,
						maxPerExecution: 36,
						credential: 'perItem',
					}),
					[{ product: 'p0', kind: 'resetAfter', skip: 0 }],
					{ kind: 'kill', at: 1 },
				),
				new RetryAfterKill(0, { ...retry, edit: { resend: false } }, []),
				new RetryAfterKill(0, { ...retry, edit: { resend: true } }, []),
				new RetryExecution(0, { resend: true }, []),
			]);
		},
	);

	// cap passed (the fresh seed 1001 at ef04e9f, history 314 of 600, open; as generated): a capped
	// two-batch run killed, its kill retried twice (reordered and crash-recovered, then with Resend),
	// then the failed retry retried with Resend.
	it.failing(
		'6. Max Credits per Execution over a kill retried twice, the second with Resend, then its retry',
		async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					spec(
						[
							['p1/A', 'p1/A'],
							['k1/B', 'p0/A', 'k0/B', 'k4/B'],
						],
						{
							tries: 2,
							resend: true,
							download: true,
							maxPerExecution: 36,
						},
					),
					[
						{ product: 'k0', kind: 'download500', skip: 0 },
						{ product: 'k0', kind: 'download500', skip: 1 },
					],
					{ kind: 'kill', at: 7 },
				),
				new RetryAfterKill(
					0,
					{
						reorder: true,
						crashRecovered: true,
						repeatCall: false,
						edit: { resend: false, legacyClear: true, credential: 'fixed', maxPerExecution: 24 },
						aim: true,
					},
					[
						{ product: 'k1', kind: 'resetAfter', skip: 0 },
						{ product: 'p0', kind: 'resetAfter', skip: 1 },
					],
				),
				new RetryAfterKill(
					8,
					{
						...retry,
						edit: {
							resend: true,
							legacyClear: true,
							credential: 'fixed',
							maxPerExecution: 36,
							onError: 'errorOutput',
						},
						aim: true,
					},
					[{ product: 'k1', kind: 'credits402', skip: 1 }],
				),
				new RetryExecution(
					0,
					{ resend: true, legacyClear: true, credential: 'fixed', maxPerExecution: 36 },
					[],
				),
			]);
		},
	);

	// cap passed (the fresh seed 1002 at ef04e9f, history 521 of 600; as generated): no kill. A
	// capped run whose first answer is lost (a timeout) and which the user stops at the next send,
	// retried three times (Resend on, on, then the original workflow): the last retry, of the
	// original record, counted that record's spend, not the resend a sibling retry made since.
	it('6. Max Credits per Execution over one stopped execution retried three times, Resend on the first two', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec(
					[
						['k0/A', 'k0/B', 'p1/A'],
						['p0/A', 'p1/A'],
					],
					{
						tries: 2,
						maxPerExecution: 36,
						credential: 'perItem',
						timeout1: true,
					},
				),
				[{ product: 'k0', kind: 'timeoutAfter', skip: 0 }],
				{ kind: 'stopAt', route: 'generate', skip: 1, when: 'after' },
			),
			new RetryExecution(0, { resend: true }, [{ product: 'p1', kind: 'credits402', skip: 0 }]),
			new RetryExecution(0, { resend: true }, []),
			new RetryExecution(0, undefined, []),
		]);
	});

	// Found by seed 49 past CI's 250 histories (600 at 9c024b1), open; written as generated.

	// key paid twice (seed 49, history 324 of 600: beyond CI's 250).
	it.failing(
		"1. a per-row keyed run failed, retried with the credential fixed to A's key (a kill during its downloads): B's row of the key, now charged to A, pays the key again on A",
		async () => {
			await runHistory(emulator, 'real', [
				new NewExecution(
					{
						concurrency: 1,
						tries: 2,
						onError: 'stop',
						resend: false,
						legacyClear: false,
						download: false,
						maxPerExecution: 0,
						maxPerItem: 0,
						credential: 'perItem',
						asTool: false,
						runs: [
							[
								{ product: 'k0', account: 'A' },
								{ product: 'k0', account: 'B' },
								{ product: 'k0', account: 'A' },
							],
							[{ product: 'p1', account: 'B' }],
							[{ product: 'k1', account: 'B' }],
						],
					},
					[{ product: 'k0', kind: 'resetAfter', skip: 1 }],
					undefined,
				),
				new RetryExecution(
					2,
					{
						resend: true,
						legacyClear: false,
						credential: 'fixed',
						maxPerExecution: 36,
						onError: 'stop',
					},
					[],
					{ kind: 'killAt', route: 'file', skip: 3, when: 'before' },
				),
			]);
		},
	);

	// result to another account's row and paid twice (seed 49, history 411 of 600).
	it.failing(
		"4. a stopped loop retried twice, then the kill of the second retried while another process runs: a row of A is given B's generation",
		async () => {
			await runHistory(emulator, 'scaled', [
				new NewExecution(
					{
						concurrency: 1,
						tries: 3,
						onError: 'stop',
						resend: true,
						legacyClear: false,
						download: true,
						maxPerExecution: 0,
						maxPerItem: 0,
						credential: 'perItem',
						asTool: false,
						runs: [
							[{ product: 'p0', account: 'A' }],
							[{ product: 'k1', account: 'B' }],
							[{ product: 'k1', account: 'B' }],
						],
					},
					[],
					{ kind: 'stop', at: 13 },
				),
				new RetryExecution(0, { resend: true }, [], undefined),
				new RetryExecution(
					0,
					{ resend: true, legacyClear: true, credential: 'fixed', maxPerExecution: 0 },
					[
						{ product: 'k0', kind: 'refund500', skip: 1 },
						{ product: 'k1', kind: 'refund500', skip: 1 },
					],
					{ kind: 'killBefore', at: 2 },
				),
				new RetryAfterKill(
					1,
					{
						reorder: false,
						crashRecovered: false,
						repeatCall: false,
						edit: {
							resend: false,
							legacyClear: false,
							credential: 'fixed',
							maxPerExecution: 36,
							onError: 'errorOutput',
						},
						aim: false,
					},
					[],
					{
						kind: 'pause',
						at: 5,
						other: {
							concurrency: 1,
							onError: 'stop',
							resend: false,
							legacyClear: true,
							download: true,
							maxPerExecution: 24,
							maxPerItem: 0,
							credential: 'fixed',
							asTool: false,
							runs: [
								[
									{ product: 'k2', account: 'A' },
									{ product: 'k5', account: 'A' },
									{ product: 'k0', account: 'A' },
								],
								[
									{ product: 'k1', account: 'A' },
									{ product: 'k1', account: 'B' },
									{ product: 'k0', account: 'A' },
								],
								[
									{ product: 'k1', account: 'A' },
									{ product: 'p1', account: 'B' },
								],
							],
						},
					},
				),
			]);
		},
	);

	// paid twice (seed 49, history 446 of 600; the API-key class of story 5).
	it.failing(
		"3. story 5 retried, then that retry retried with Resend under A's first key: p0 on A is paid a third time",
		async () => {
			await runHistory(emulator, 'scaled', [
				new NewExecution(
					{
						runs: [
							[
								{ product: 'p0', account: 'A' },
								{ product: 'p0', account: 'B' },
								{ product: 'p1', account: 'A' },
							],
						],
						concurrency: 1,
						onError: 'stop',
						resend: false,
						credential: 'second',
						asTool: false,
					},
					[{ product: 'p1', kind: 'credits402', skip: 0 }],
					undefined,
				),
				new RetryExecution(0, { credential: 'perItem', onError: 'stop' }, [], undefined),
				new RetryExecution(
					1,
					{ resend: true, legacyClear: true, credential: 'fixed', maxPerExecution: 0 },
					[
						{ product: 'p0', kind: 'resetAfter', skip: 0 },
						{ product: 'k0', kind: 'timeoutAfter', skip: 1 },
					],
					undefined,
				),
			]);
		},
	);
});
