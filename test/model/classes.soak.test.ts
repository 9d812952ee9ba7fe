/**
 * The breaks of issue 49, each as a history the checker (history.ts, promises.ts) runs and judges:
 * written out from its shrunk counterexample or by hand where the generator did not find it alone.
 * Each fails while its class is not fixed (it names the promise broken).
 */
import { useEmulator } from '../harness/emulator';
import { NewExecution, RetryAfterKill, RetryExecution, type RunSpec, runHistory } from './history';
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
	clear: false,
	resend: false,
	credential: 'fixed',
	asTool: false,
	...more,
});
const retry = { reorder: false, crashRecovered: false, repeatCall: false };

describe('issue 49', () => {
	it("a loop's later batch (or a Retry On Fail try) of a new execution reads the sends' row", async () => {
		await runHistory(emulator, 'real', [new NewExecution(spec([['p0/A'], ['p1/A']]), [])]);
	});

	it('1. Clear Idempotency Key per try: twin keyed rows with Retry On Fail', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['k0/A', 'k0/A']], { tries: 2, clear: true }), []),
		]);
	});

	it('1. Clear Idempotency Key per batch: a twin in a later batch of the loop', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['k0/A'], ['k0/A']], { clear: true, onError: 'errorOutput' }), []),
		]);
	});

	it('2. a key used by another execution between two tries of Retry On Fail', async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['k0/A']], { tries: 2 }),
				[{ product: 'k0', kind: 'refund500', skip: 0 }],
				{
					kind: 'pause',
					at: 4,
					other: spec([['k0/A']]),
				},
			),
		]);
	});

	it("3. the retry's asking met a busy store twice: items never sent refused on the next try", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A', 'p1/A']], { tries: 2 }), [], { kind: 'kill', at: 1 }),
			new RetryAfterKill(0, retry, [], { kind: 'busy', at: 3, times: 2 }),
		]);
	});

	it("4. an agent call answered, killed, retried: the model's repeat is paid again", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A']], { asTool: true }), [], { kind: 'kill', at: 99 }),
			new RetryAfterKill(0, { ...retry, repeatCall: true }, []),
		]);
	});

	it("6. identical asks of two accounts, killed after A's send, rows reordered on the retry", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(
				spec([['p0/A', 'p0/B']], { credential: 'perItem', onError: 'errorOutput' }),
				[],
				{ kind: 'killBefore', at: 4 },
			),
			new RetryAfterKill(0, { ...retry, reorder: true }, []),
		]);
	});

	it("7. a 402 on the agency's key, retried with the per-seller credential", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['p0/A', 'p1/B', 'p2/B']]), [
				{ product: 'p1', kind: 'credits402', skip: 0 },
			]),
			new RetryExecution(0, { credential: 'perItem' }, []),
		]);
	});

	it("8. a key's send, n8n stopped after it, the next run: idempotency_key_used, not_sent", async () => {
		await runHistory(emulator, 'real', [
			new NewExecution(spec([['k0/A']]), [], { kind: 'kill', at: 99 }),
			new NewExecution(spec([['k0/A']], { onError: 'errorOutput' }), []),
		]);
	});
});
