/**
 * The money path against the model of its promises (issues 49, 56): seeded random histories of new
 * executions, kills, Stops, restarts, Executions → Retry, Retry On Fail, loops, keys, two accounts,
 * caps, downloads, agent calls, store and service faults, run for real and checked after every
 * command (history.ts, promises.ts). A failure prints the shrunk history as a test (`Replay:`).
 *
 * `npm run test:money` runs two seeds, each MODEL_RUNS histories (250) or MODEL_MINUTES (2.5),
 * whichever comes first: the regression seed 49, and a fresh seed derived from the commit
 * (`git rev-parse HEAD`), printed, so that each commit searches somewhere new and a failure
 * replays:
 *
 *   MODEL_SEED=<seed> npm run test:money      # that seed alone
 *   MODEL_RUNS=2000 MODEL_MINUTES=120 MODEL_SEED=… npm run test:money   # a long one
 *
 * MODEL_WITHOUT=stop,tool,… leaves features out, to look past a break already found (history.ts).
 */
/* eslint-disable @n8n/community-nodes/no-restricted-globals, @n8n/community-nodes/require-node-api-error, no-console -- a test, run by environment */
// eslint-disable-next-line @n8n/community-nodes/no-restricted-imports
import { execSync } from 'child_process';
import fc from 'fast-check';

import { useEmulator } from '../harness/emulator';
import { capsArb, commandsArb, runHistory } from './history';

const emulator = useEmulator();

const RUNS = Number(process.env.MODEL_RUNS ?? 250);
const MINUTES = Number(process.env.MODEL_MINUTES ?? 2.5);
const PATH = process.env.MODEL_PATH;
/** MODEL_SHRINK=0: stop at the first break, unshrunk (test/model/mutants.mjs: is a mutant found?). */
const SHRINK = process.env.MODEL_SHRINK !== '0';
/**
 * MODEL_TALLY=1: never stop; count the histories that break each rule (the text before its first
 * colon) and print the tally with one replay of each: what the code as it is breaks, and how often.
 */
const TALLY = process.env.MODEL_TALLY === '1';

/** A seed from the commit: the first 7 hex digits of HEAD, as a number (1 when there is no git). */
function commitSeed(): number {
	try {
		// eslint-disable-next-line @n8n/community-nodes/no-dangerous-functions -- a test reading its commit
		const head = execSync('git rev-parse HEAD', { encoding: 'utf8', stdio: 'pipe' }).trim();
		return parseInt(head.slice(0, 7), 16);
	} catch {
		return 1;
	}
}

const SEEDS = process.env.MODEL_SEED
	? process.env.MODEL_SEED.split(',').map(Number)
	: [49, commitSeed()];

describe.each(SEEDS)('seed %i', (seed) => {
	it(
		`${RUNS} random histories keep the money path's promises (seed ${seed})`,
		async () => {
			console.log(`seed ${seed} (replay: MODEL_SEED=${seed} npm run test:money)`);
			const started = Date.now();
			let histories = 0;
			let firstBreak: { histories: number; ms: number } | undefined;
			const tally = new Map<string, { count: number; example: string }>();
			try {
				await fc.assert(
					fc.asyncProperty(capsArb, commandsArb, async (caps, commands) => {
						histories++;
						try {
							await runHistory(emulator, caps, commands);
						} catch (error) {
							if (TALLY) {
								const message = (error as Error).message;
								const rules = [...message.matchAll(/^- ([^:\n]+):/gm)].map((m) => m[1]);
								const broke = [
									...new Set(rules.length ? rules : [`(threw) ${message.slice(0, 80)}`]),
								];
								// One line per broken history: test/model/mutants.mjs compares them with the code unmutated.
								const first = message.split('\n').find((line) => line.trim().startsWith('- '));
								console.log(
									`tally ${seed} ${histories} ${broke.join('|')} :: ${first?.trim() ?? ''}${process.env.MODEL_TALLY_FULL ? `\n${message}` : ''}`,
								);
								for (const rule of broke) {
									const seen = tally.get(rule) ?? { count: 0, example: message };
									seen.count++;
									tally.set(rule, seen);
								}
								return;
							}
							firstBreak ??= { histories, ms: Date.now() - started };
							throw error;
						}
					}),
					{
						seed,
						path: PATH,
						numRuns: PATH ? 1 : RUNS,
						endOnFailure: PATH !== undefined || !SHRINK,
						interruptAfterTimeLimit: MINUTES * 60_000,
						markInterruptAsFailure: false,
					},
				);
			} finally {
				for (const [rule, { count, example }] of tally)
					console.log(`${rule}: ${count} histories\n${example}`);
				const minutes = (ms: number) => (ms / 60_000).toFixed(2);
				const rate = (n: number, ms: number) => (n / (ms / 60_000)).toFixed(0);
				const upTo = firstBreak ?? { histories, ms: Date.now() - started };
				console.log(
					[
						`seed ${seed}: ${upTo.histories} histories in ${minutes(upTo.ms)} min (${rate(upTo.histories, upTo.ms)} a minute)${firstBreak ? ' up to the first break' : ''}`,
						firstBreak
							? `${histories} with shrinking, in ${minutes(Date.now() - started)} min`
							: '',
					]
						.filter(Boolean)
						.join('; '),
				);
			}
		},
		(MINUTES + 1) * 60_000,
	);
});
