/**
 * What the benchmarks get from their launcher (test/bench/run.mjs): the clock and the emulator they
 * run against. The launcher owns everything the linted TypeScript may not touch (process, timers,
 * printing); the emulator runs in a child process so its own work and buffers are not measured.
 */
import type { INodeType } from 'n8n-workflow';

import { EmulatorControl } from '../emulator/client';
import type { HarnessCredentials } from '../harness/n8n';

/**
 * The node classes, handed in by the launcher: under tsx a plain `require('…/ImagePack.node')` finds
 * the codex file ImagePack.node.json before the .ts source, so the .mjs imports them with extensions.
 */
export interface NodeClasses {
	ImagePack: new () => INodeType;
	ImagePackTrigger?: new () => INodeType;
}

export interface BenchClock {
	/** Milliseconds, monotonic (performance.now()). */
	now(): number;
	/** This process's CPU time, user and system, in milliseconds (process.cpuUsage()). */
	cpuMs(): number;
}

export interface EmulatorEndpoint {
	baseUrl: string;
	apiKey: string;
	accountId: string;
}

export interface BenchEnv {
	clock: BenchClock;
	emulator: EmulatorEndpoint;
	control: EmulatorControl;
	credentials: HarnessCredentials;
	quick: boolean;
	nodes: NodeClasses;
	/** Progress lines for the terminal (stderr). */
	log(line: string): void;
}

export function benchEnv(options: {
	clock: BenchClock;
	emulator: EmulatorEndpoint;
	quick: boolean;
	nodes: NodeClasses;
	log: (line: string) => void;
}): BenchEnv {
	return {
		...options,
		control: new EmulatorControl(options.emulator.baseUrl),
		credentials: { baseUrl: options.emulator.baseUrl, apiKey: options.emulator.apiKey },
	};
}

/** Times one async call. */
export async function timed<T>(clock: BenchClock, work: () => Promise<T>): Promise<{ ms: number; value: T }> {
	const started = clock.now();
	const value = await work();
	return { ms: clock.now() - started, value };
}
