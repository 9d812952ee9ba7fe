/**
 * The money path against the model of its promises (issue 49): seeded random histories of new
 * executions, kills, restarts, Executions → Retry, Retry On Fail, loops, keys, two accounts, agent
 * calls, store and service faults, run for real and checked after every command (history.ts,
 * promises.ts). A failure prints the shrunk history as a test (`Replay:`) and the seed and path
 * that replay it:
 *
 *   MODEL_SEED=<seed> MODEL_PATH=<path> npm run test:soak -- test/model/money
 *
 * Bounded by default (MODEL_RUNS histories, at most MODEL_MINUTES, shrinking included: about 3
 * minutes on two cores); a long search before a release, by seed count and time:
 *
 *   MODEL_RUNS=2000 MODEL_MINUTES=120 npm run test:soak -- test/model/money
 *
 * MODEL_WITHOUT=clear,tool,… leaves features out, to look past a break already found (history.ts).
 */
/* eslint-disable @n8n/community-nodes/no-restricted-globals, @n8n/community-nodes/require-node-api-error, no-console -- a test, run by environment */
import fc from 'fast-check';

import { useEmulator } from '../harness/emulator';
import { capsArb, commandsArb, runHistory } from './history';

const emulator = useEmulator();

const RUNS = Number(process.env.MODEL_RUNS ?? 120);
const MINUTES = Number(process.env.MODEL_MINUTES ?? 2.5);
const SEED = Number(process.env.MODEL_SEED ?? 49);
const PATH = process.env.MODEL_PATH;
/** MODEL_SHRINK=0: stop at the first break, unshrunk (test/model/mutants.mjs: is a mutant found?). */
const SHRINK = process.env.MODEL_SHRINK !== '0';

it(
	`${RUNS} random histories keep the money path's promises (seed ${SEED})`,
	async () => {
		const started = Date.now();
		let histories = 0;
		let firstBreak: { histories: number; ms: number } | undefined;
		try {
			await fc.assert(
				fc.asyncProperty(capsArb, commandsArb, async (caps, commands) => {
					histories++;
					try {
						await runHistory(emulator, caps, commands);
					} catch (error) {
						firstBreak ??= { histories, ms: Date.now() - started };
						throw error;
					}
				}),
				{
					seed: SEED,
					path: PATH,
					numRuns: PATH ? 1 : RUNS,
					endOnFailure: PATH !== undefined || !SHRINK,
					interruptAfterTimeLimit: MINUTES * 60_000,
					markInterruptAsFailure: false,
				},
			);
		} finally {
			const minutes = (ms: number) => (ms / 60_000).toFixed(2);
			const rate = (n: number, ms: number) => (n / (ms / 60_000)).toFixed(0);
			const upTo = firstBreak ?? { histories, ms: Date.now() - started };
			console.log(
				[
					`${upTo.histories} histories in ${minutes(upTo.ms)} min (${rate(upTo.histories, upTo.ms)} a minute)${firstBreak ? ' up to the first break' : ''}`,
					firstBreak ? `${histories} with shrinking, in ${minutes(Date.now() - started)} min` : '',
				]
					.filter(Boolean)
					.join('; '),
			);
		}
	},
	(MINUTES + 1) * 60_000,
);
