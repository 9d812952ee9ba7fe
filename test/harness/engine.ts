/**
 * Runs a node through n8n's own engine (n8n-core's `WorkflowExecute`), so Retry On Fail's tries,
 * run indexes and the execution's context data behave exactly as in n8n; and retries a failed
 * execution as *Executions → Retry* does (n8n's `ExecutionService.retry`): a new execution id, mode
 * `retry`, the failed node's errored run dropped, everything else (context data included) copied.
 */
import { Container } from '@n8n/di';
import {
	ErrorReporter,
	ExecutionLifecycleHooks,
	SupplyDataContext,
	WorkflowExecute,
} from 'n8n-core';
import type {
	IExecuteFunctions,
	INode,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	IRun,
	IRunExecutionData,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import {
	type HarnessCredentials,
	additionalData,
	inactiveWorkflow,
	makeNode,
	newRunExecutionData,
} from './n8n';

export interface EngineOptions {
	nodeType: INodeType;
	parameters: INodeParameters;
	credentials: HarnessCredentials;
	/** Input items; several lists run the node several times in one execution (as a loop does). */
	runs?: INodeExecutionData[][];
	continueOnFail?: boolean;
	/** On Error: Continue (using error output); implies continueOnFail. */
	errorOutput?: boolean;
	/** Retry On Fail with this many tries (n8n allows 2 to 5). */
	maxTries?: number;
	asTool?: boolean;
}

export interface EngineRun {
	run: IRun;
	executionId: string;
	options: EngineOptions;
	/** The output of the node's last run (empty when it failed). */
	output: INodeExecutionData[];
	/** Its error output (Continue (using error output)). */
	errorOutput: INodeExecutionData[];
	/** The node's error, when its last run failed. */
	error?: { message: string; description?: string | null; context?: Record<string, unknown> };
	/** The execution's context data of the node (`getContext('node')`). */
	nodeContext: Record<string, unknown>;
	/**
	 * What n8n's database held of the execution when it started: all a retry has when n8n was killed
	 * before any node finished (Save Execution Progress off), resume token included.
	 */
	atStart: IRunExecutionData;
}

let executions = 0;

/** n8n reports every node error to its error reporter, which logs it: the tests read them instead. */
function quietErrorReporter() {
	(Container.get(ErrorReporter) as unknown as { report: () => void }).report = () => undefined;
}

function nodeOf(options: EngineOptions): INode {
	const made = makeNode(options.nodeType, options.parameters, {
		continueOnFail: options.continueOnFail,
		retryOnFail: options.maxTries !== undefined,
		asTool: options.asTool,
	});
	const node: INode = options.errorOutput ? { ...made, onError: 'continueErrorOutput' } : made;
	// 1 ms between tries: n8n reads 0 as "not set" (1000 ms).
	return options.maxTries === undefined
		? node
		: { ...node, maxTries: options.maxTries, waitBetweenTries: 1 };
}

/**
 * An execution started and not awaited: what n8n's database holds of it from its start on (enough
 * for `retryAfterKill` if it is killed), and its end. A scheduler (test/model) may keep `done` from
 * ever settling, as n8n killed mid-run does.
 */
export interface StartedRun extends Pick<EngineRun, 'executionId' | 'options' | 'atStart'> {
	done: Promise<EngineRun>;
	/**
	 * The user's Stop (the editor's Stop button, or the REST API's stop): n8n cancels the execution
	 * (`PCancelable.cancel()`), which aborts the nodes' cancel signal; `done` still settles with the
	 * run as n8n saves it (status `canceled`).
	 */
	stop?: () => void;
	/**
	 * When each of the node's runs ended (ms, in order): n8n's `nodeExecuteAfter`, once a run's last
	 * try is over and its output handed to n8n. A scheduler (test/model) reads it at a kill.
	 */
	nodeRunsEnded?: number[];
}

function start(
	options: EngineOptions,
	data: IRunExecutionData,
	mode: WorkflowExecuteMode,
	retryOf?: string,
): StartedRun {
	const node = data.executionData!.nodeExecutionStack[0]?.node ?? nodeOf(options);
	const workflow = inactiveWorkflow(options.nodeType, node);
	quietErrorReporter();
	const executionId = `execution-${++executions}`;
	const hooks = new ExecutionLifecycleHooks(
		mode,
		executionId,
		{ id: workflow.id, name: 'engine', nodes: [node], connections: {} } as never,
		retryOf,
	);
	const nodeRunsEnded: number[] = [];
	hooks.addHandler('nodeExecuteAfter', () => void nodeRunsEnded.push(Date.now()));
	const extra = { ...additionalData(options.credentials), executionId, hooks };
	const atStart = JSON.parse(JSON.stringify(data)) as IRunExecutionData;
	const execution = new WorkflowExecute(extra, mode, data).processRunExecutionData(workflow);
	const finish = async (): Promise<EngineRun> => {
		const run = await execution;
		const last = run.data.resultData.runData[node.name]?.at(-1);
		return {
			run,
			executionId,
			options,
			output: (last?.data?.main?.[0] ?? []) as INodeExecutionData[],
			errorOutput: (last?.data?.main?.[1] ?? []) as INodeExecutionData[],
			error: last?.error as EngineRun['error'],
			nodeContext: (run.data.executionData?.contextData?.[`node:${node.name}`] ?? {}) as Record<
				string,
				unknown
			>,
			atStart,
		};
	};
	return {
		executionId,
		options,
		atStart,
		done: finish(),
		stop: () => execution.cancel(),
		nodeRunsEnded,
	};
}

/** A new execution of the node alone, started with its input items on the stack. */
export async function runInEngine(options: EngineOptions): Promise<EngineRun> {
	return await startInEngine(options).done;
}

/** `runInEngine`, started and not awaited. */
export function startInEngine(options: EngineOptions): StartedRun {
	const node = nodeOf(options);
	const data = newRunExecutionData();
	for (const items of options.runs ?? [[{ json: {} }]]) {
		data.executionData!.nodeExecutionStack.push({ node, data: { main: [items] }, source: null });
	}
	return start(options, data, 'manual');
}

/**
 * *Executions → Retry* of an execution n8n was killed in before the node finished (nothing but its
 * start was saved): the run starts again from its saved start, under the same resume token, with
 * `changes` as "Retry with currently saved workflow" brings them (the items too: upstream nodes run
 * again and may return others).
 */
export async function retryAfterKill(
	killed: Pick<EngineRun, 'atStart' | 'options' | 'executionId'>,
	changes: Partial<Pick<EngineOptions, 'parameters' | 'credentials' | 'runs'>> = {},
): Promise<EngineRun> {
	return await startRetryAfterKill(killed, changes).done;
}

/** `retryAfterKill`, started and not awaited; `changes` may also bring another node type (a restarted n8n's). */
export function startRetryAfterKill(
	killed: Pick<EngineRun, 'atStart' | 'options' | 'executionId'>,
	changes: Partial<Pick<EngineOptions, 'parameters' | 'credentials' | 'runs' | 'nodeType'>> = {},
): StartedRun {
	const data = JSON.parse(JSON.stringify(killed.atStart)) as IRunExecutionData;
	const options = { ...killed.options, ...changes };
	if (changes.runs || changes.parameters) {
		const node = nodeOf(options);
		data.executionData!.nodeExecutionStack = (options.runs ?? [[{ json: {} }]]).map((items) => ({
			node,
			data: { main: [items] },
			source: null,
		}));
	}
	return start(options, data, 'retry', killed.executionId);
}

/**
 * *Executions → Retry* of a failed execution. `parameters`: retry with the saved workflow after the
 * node's parameters were changed (n8n's "Retry with currently saved workflow"); `changes`: the
 * credential the saved workflow now uses (replaced, or edited) and the node's settings.
 */
export async function retryExecution(
	failed: EngineRun,
	parameters?: INodeParameters,
	changes: Partial<Pick<EngineOptions, 'credentials' | 'errorOutput' | 'continueOnFail'>> = {},
): Promise<EngineRun> {
	return await startRetryExecution(failed, parameters, changes).done;
}

/** `retryExecution`, started and not awaited; `changes` may also bring another node type or tries. */
export function startRetryExecution(
	failed: Pick<EngineRun, 'run' | 'options' | 'executionId'>,
	parameters?: INodeParameters,
	changes: Partial<
		Pick<EngineOptions, 'credentials' | 'errorOutput' | 'continueOnFail' | 'nodeType' | 'maxTries'>
	> = {},
): StartedRun {
	// The database round trip: n8n stores the run as JSON (flatted) and reads a copy back.
	const data = JSON.parse(JSON.stringify(failed.run.data)) as IRunExecutionData;
	delete data.resultData.error;
	const last = data.resultData.lastNodeExecuted;
	const runs = last ? data.resultData.runData[last] : undefined;
	if (runs?.length && runs[runs.length - 1].error !== undefined) runs.pop();
	const options = { ...failed.options, ...(parameters && { parameters }), ...changes };
	if (parameters || Object.keys(changes).length) {
		for (const entry of data.executionData!.nodeExecutionStack) entry.node = nodeOf(options);
	}
	return start(options, data, 'retry', failed.executionId);
}

/**
 * One tool call as AI Agent 2.x makes it (n8n-core's `makeHandleToolInvocation`): a SupplyDataContext
 * of the tool node, under the run index n8n gives the call, the model's arguments as the input item,
 * in the agent's execution (`data`: pass the same object for calls of one execution).
 */
export async function callAsLangChainTool(
	options: Pick<EngineOptions, 'nodeType' | 'parameters' | 'credentials'>,
	data: IRunExecutionData,
	runIndex: number,
): Promise<INodeExecutionData[]> {
	const node = makeNode(options.nodeType, options.parameters, { asTool: true });
	const workflow = inactiveWorkflow(options.nodeType, node);
	const items = [{ json: {} }];
	const context = new SupplyDataContext(
		workflow,
		node,
		additionalData(options.credentials),
		'manual',
		data,
		runIndex,
		items,
		{ [NodeConnectionTypes.AiTool]: [items] },
		NodeConnectionTypes.AiTool,
		{ node, data: { main: [items] }, source: null },
		[],
	);
	// As n8n-core does: the tool node's execute() runs on the supply-data context.
	const result = (await options.nodeType.execute!.call(
		context as unknown as IExecuteFunctions,
	)) as INodeExecutionData[][];
	return result[0];
}
