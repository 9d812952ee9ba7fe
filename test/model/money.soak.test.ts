/**
 * The money path against the model of its promises (issue 49): seeded random histories of new
 * executions, kills, restarts, Executions → Retry, Retry On Fail, loops, keys, two accounts, agent
 * calls, store and service faults, run for real and checked after every command (history.ts,
 * promises.ts). A failure prints the shrunk history and the seed and path that replay it:
 *
 *   MODEL_SEED=<seed> MODEL_PATH=<path> npm run test:soak -- test/model/money
 *
 * Bounded by default (MODEL_RUNS histories, MODEL_MINUTES at most, shrinking included); a long
 * search before a release: MODEL_RUNS=2000 MODEL_MINUTES=120 npm run test:soak -- test/model/money
 */
import fc from 'fast-check';

import { useEmulator } from '../harness/emulator';
import { capsArb, commandsArb, runHistory } from './history';

const emulator = useEmulator();

const RUNS = Number(process.env.MODEL_RUNS ?? 120);
const MINUTES = Number(process.env.MODEL_MINUTES ?? 2.5);
const SEED = Number(process.env.MODEL_SEED ?? 49);
const PATH = process.env.MODEL_PATH;

it(`${RUNS} random histories keep the money path's promises (seed ${SEED})`, async () => {
	const started = Date.now();
	let histories = 0;
	try {
		await fc.assert(
			fc.asyncProperty(capsArb, commandsArb, async (caps, commands) => {
				histories++;
				await runHistory(emulator, caps, commands);
			}),
			{
				seed: SEED,
				path: PATH,
				numRuns: PATH ? 1 : RUNS,
				endOnFailure: PATH !== undefined,
				interruptAfterTimeLimit: MINUTES * 60_000,
				markInterruptAsFailure: false,
			},
		);
	} finally {
		const minutes = (Date.now() - started) / 60_000;
		console.log(
			`${histories} histories (shrinking included) in ${minutes.toFixed(1)} min: ${(histories / minutes).toFixed(0)} a minute`,
		);
	}
}, (MINUTES + 1) * 60_000);
