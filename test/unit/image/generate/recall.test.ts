/**
 * Before n8n 2.14 (no resume token) a retry is told from new work by `cutOff`: whether it retries a
 * run n8n stopped while Generate ran. The context here is a stand-in for n8n 1.x's retry context
 * (its mode, and whether crash recovery left the node in the run data): the unit suite runs n8n 2.41,
 * whose retries carry the token; test/compat/crash-nokey.test.mjs drives the real 1.100.1 and 2.11.4.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { cutOff } from '../../../../nodes/ImagePack/actions/image/generate/recall';
import { RunMemory } from '../../../../nodes/ImagePack/actions/image/generate/stores';

function context(mode: 'retry' | 'manual', nodeInRunData: boolean) {
	return {
		getMode: () => mode,
		getNode: () => ({ name: 'Generate' }),
		getWorkflowDataProxy: () => ({ $: () => ({ isExecuted: nodeInRunData }) }),
	} as unknown as IExecuteFunctions;
}

describe('cutOff (n8n before 2.14)', () => {
	it('a retry of a run n8n stopped in the node: cut off, kept for the later runs of the execution', () => {
		const store = {};
		expect(cutOff(context('retry', true), new RunMemory(store, 0, 'retry-1'))).toBe(true);
		expect(cutOff(context('retry', false), new RunMemory(store, 1, 'retry-1'))).toBe(true);
	});

	it('a new execution, and a retry of a run that failed (its start saved), are not', () => {
		expect(cutOff(context('manual', true), new RunMemory({}, 0, 'new'))).toBe(false);
		const failed = {};
		cutOff(context('manual', false), new RunMemory(failed, 0, 'failed'));
		expect(cutOff(context('retry', true), new RunMemory(failed, 0, 'retry-of-failed'))).toBe(false);
	});

	it('a retry of a cut-off retry is cut off too (issue 56): it shares the stopped run', () => {
		const store = {};
		cutOff(context('retry', true), new RunMemory(store, 0, 'retry-1'));
		// The first retry failed (its context data saved, its start with it); the user retries it.
		const copied = JSON.parse(JSON.stringify(store)) as Record<string, unknown>;
		expect(cutOff(context('retry', true), new RunMemory(copied, 0, 'retry-2'))).toBe(true);
		// A new execution never inherits it (n8n copies context data only into a retry).
		expect(cutOff(context('manual', true), new RunMemory(copied, 0, 'new'))).toBe(false);
	});
});
