/**
 * The durable record's rule alone: what each send is recorded under, so that what re-runs a stopped
 * attempt finds it and new work does not.
 */
import {
	TOOL_WINDOW_MS,
	keyValue,
	runName,
	sendValue,
	sendValues,
	toolValues,
} from '../../../../nodes/ImagePack/actions/image/generate/durable';

const ask = {
	asTool: false,
	run: 'token abc',
	runIndex: 0,
	digest: 'd1',
	requestOnly: 'r1',
	occurrence: 0,
	idempotencyKey: '',
	now: 5 * TOOL_WINDOW_MS + 10,
};

describe('sendValues', () => {
	it('a run’s send: the run, the run index, what is asked and its occurrence', () => {
		expect(sendValues(ask)).toEqual({ values: [sendValue('token abc', 0, 'd1', 0)], tool: [] });
		const others = [
			{ run: 'token other' }, // a new execution
			{ runIndex: 1 }, // the node's next run in a loop
			{ digest: 'd2' }, // another request
			{ occurrence: 1 }, // the second identical item
		].map((change) => sendValues({ ...ask, ...change }).values[0]);
		expect(new Set([...others, sendValues(ask).values[0]]).size).toBe(5);
	});

	it('the Idempotency Key alone, whatever the run and the request', () => {
		const keyed = { ...ask, idempotencyKey: 'sku-1' };
		expect(sendValues(keyed).values).toContain(keyValue('sku-1'));
		expect(sendValues({ ...keyed, run: 'token other', digest: 'd9' }).values).toContain(
			keyValue('sku-1'),
		);
	});

	it('a tool call: the request (no call id) in this window and the next', () => {
		const tool = sendValues({ ...ask, asTool: true });
		expect(tool.values).toEqual([]);
		expect(tool.tool).toEqual(toolValues('r1', ask.now));
		// A repeat anywhere within one window after the send matches one of the two.
		const repeat = toolValues('r1', ask.now + TOOL_WINDOW_MS - 1)[0];
		expect(tool.tool).toContain(repeat);
		expect(tool.tool).not.toContain(toolValues('r1', ask.now + 2 * TOOL_WINDOW_MS)[0]);
	});
});

describe('runName', () => {
	const context = (resumeUrl: unknown, executionId = '42') =>
		({
			getWorkflowDataProxy: () => ({ $execution: { resumeUrl } }),
			getExecutionId: () => executionId,
		}) as never;

	it('is the resume token a retry copies (n8n 2.x), else the execution id (1.x)', () => {
		expect(runName(context('http://n8n/webhook-waiting/42?signature=tok123'))).toBe('token tok123');
		expect(runName(context('http://n8n/webhook-waiting/42'))).toBe('execution 42');
		expect(runName(context(undefined))).toBe('execution 42');
	});
});
