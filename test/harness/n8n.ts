/**
 * Runs this package's nodes inside real n8n execution contexts (`ExecuteContext`, `PollContext` from
 * n8n-core, `Workflow` and expressions from n8n-workflow), so parameters, credentials, HTTP helpers,
 * binary data and static data behave as they do in n8n. Only the surroundings that need a running n8n
 * instance (database, credential storage, UI) are replaced by the small in-memory parts below.
 */
import { Container } from '@n8n/di';
import {
	BinaryDataConfig,
	BinaryDataService,
	ExecuteContext,
	LoadOptionsContext,
	PollContext,
	RoutingNode,
} from 'n8n-core';
import type {
	ICredentialDataDecryptedObject,
	ICredentialsExpressionResolveValues,
	ICredentialType,
	IExecuteData,
	IDataObject,
	IHttpRequestOptions,
	INode,
	INodeCredentialsDetails,
	INodeExecutionData,
	INodeListSearchResult,
	INodeParameters,
	INodeType,
	INodeTypes,
	IRunExecutionData,
	INodeCredentialTestResult,
	IWorkflowExecuteAdditionalData,
	WorkflowActivateMode,
	WorkflowExecuteMode,
} from 'n8n-workflow';
import { ICredentialsHelper, Workflow, createRunExecutionData } from 'n8n-workflow';

import { ImagePackApi } from '../../credentials/ImagePackApi.credentials';
import { installDeduplicationStore } from './deduplication';

installDeduplicationStore();

export const PACKAGE = 'n8n-nodes-imagepack';

/** An Image Pack node as n8n describes it, for tests that build errors without running one. */
export const testNode: INode = {
	id: 'node-1',
	name: 'Image Pack',
	type: 'n8n-nodes-imagepack.imagePack',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};

export interface HarnessCredentials {
	baseUrl: string;
	apiKey: string;
}

/**
 * How often a node asked n8n for its decrypted credential. In n8n every such read of a poll (or of
 * any context without run data) builds and disposes an expression isolate, so a node must read its
 * credential once per call, not once per request.
 */
export const credentialReads = { count: 0 };

/** Credential storage stand-in; authentication itself resolves the credential's own expressions. */
class TestCredentialsHelper extends ICredentialsHelper {
	constructor(
		private readonly credentials: Record<string, ICredentialDataDecryptedObject>,
		private readonly types: Record<string, ICredentialType>,
	) {
		super();
	}

	getParentTypes(): string[] {
		return [];
	}

	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
		requestOptions: IHttpRequestOptions,
		workflow: Workflow,
		node: INode,
	): Promise<IHttpRequestOptions> {
		const authenticate = this.types[typeName]?.authenticate;
		if (typeof authenticate === 'function') return await authenticate(credentials, requestOptions);
		if (!authenticate || authenticate.type !== 'generic') return requestOptions;
		// As n8n does: each header is an expression evaluated with $credentials in scope.
		const headers: IDataObject = { ...(requestOptions.headers ?? {}) };
		for (const [name, value] of Object.entries(authenticate.properties.headers ?? {})) {
			headers[name] = workflow.expression.getSimpleParameterValue(
				node,
				value as string,
				'internal',
				{ $credentials: credentials } as never,
				undefined,
				'',
			) as string;
		}
		return { ...requestOptions, headers };
	}

	isCredentialUsableByNode(): boolean {
		return true;
	}

	async preAuthentication() {
		return undefined;
	}

	async runPreAuthentication() {
		return undefined;
	}

	async getCredentials(): Promise<never> {
		throw new Error('not used by these nodes');
	}

	/**
	 * The credential, its expressions (`={{ $json.apiKey }}`) resolved against the item n8n names,
	 * as n8n's CredentialsHelper does (`applyDefaultsAndOverwrites`, n8n 2.41.1).
	 */
	async getDecrypted(
		_additionalData: IWorkflowExecuteAdditionalData,
		_nodeCredentials: INodeCredentialsDetails,
		type: string,
		mode?: WorkflowExecuteMode,
		executeData?: IExecuteData,
		_raw?: boolean,
		resolve?: ICredentialsExpressionResolveValues,
	): Promise<ICredentialDataDecryptedObject> {
		const data = this.credentials[type];
		if (!data) throw new Error(`No test credentials of type ${type}`);
		credentialReads.count++;
		if (!resolve) return { ...data };
		return resolve.workflow.expression.getParameterValue(
			{ ...data } as never,
			resolve.runExecutionData,
			resolve.runIndex,
			resolve.itemIndex,
			resolve.node.name,
			resolve.connectionInputData,
			mode ?? 'manual',
			{},
			executeData,
			false,
			{ ...data },
		) as ICredentialDataDecryptedObject;
	}

	async updateCredentials() {}

	async updateCredentialsOauthTokenData() {}

	getCredentialsProperties() {
		return [];
	}
}

class TestNodeTypes implements INodeTypes {
	constructor(private readonly types: Record<string, INodeType>) {}

	getByName(type: string): INodeType {
		return this.getByNameAndVersion(type);
	}

	getByNameAndVersion(type: string): INodeType {
		// `<name>Tool` is the variant n8n derives from `usableAsTool`; it runs the same class.
		const name = type.replace(`${PACKAGE}.`, '').replace(/Tool$/, '');
		const nodeType = this.types[name];
		if (!nodeType) throw new Error(`Unknown node type ${type}`);
		return nodeType;
	}

	getKnownTypes() {
		return {};
	}
}

export function additionalData(credentials?: HarnessCredentials): IWorkflowExecuteAdditionalData {
	const helper = new TestCredentialsHelper(
		credentials ? { imagePackApi: { ...credentials } } : {},
		{ imagePackApi: new ImagePackApi() },
	);
	return {
		credentialsHelper: helper,
		executionId: 'test-execution',
		restApiUrl: 'http://localhost:5678/rest',
		instanceBaseUrl: 'http://localhost:5678',
		formWaitingBaseUrl: 'http://localhost:5678/form-waiting',
		webhookBaseUrl: 'http://localhost:5678/webhook',
		webhookWaitingBaseUrl: 'http://localhost:5678/webhook-waiting',
		webhookTestBaseUrl: 'http://localhost:5678/webhook-test',
		currentNodeParameters: undefined,
		variables: {},
		userId: 'test-user',
	} as unknown as IWorkflowExecuteAdditionalData;
}

export function makeNode(
	nodeType: INodeType,
	parameters: INodeParameters,
	options: {
		name?: string;
		continueOnFail?: boolean;
		asTool?: boolean;
		typeVersion?: number;
		retryOnFail?: boolean;
	},
): INode {
	const version = nodeType.description.version;
	return {
		id: 'node-under-test',
		name: options.name ?? nodeType.description.defaults.name ?? nodeType.description.displayName,
		type: `${PACKAGE}.${nodeType.description.name}${options.asTool ? 'Tool' : ''}`,
		typeVersion:
			options.typeVersion ?? (Array.isArray(version) ? version[version.length - 1] : version),
		position: [0, 0],
		parameters,
		credentials: { imagePackApi: { id: 'cred-1', name: 'Image Pack account' } },
		onError: options.continueOnFail ? 'continueRegularOutput' : undefined,
		retryOnFail: options.retryOnFail,
	};
}

export interface RunNodeOptions {
	nodeType: INodeType;
	parameters: INodeParameters;
	items?: INodeExecutionData[];
	credentials?: HarnessCredentials;
	continueOnFail?: boolean;
	mode?: WorkflowExecuteMode;
	/** n8n's execution cancel signal, as the editor's Stop or the REST API fire it. */
	abortSignal?: AbortSignal;
	/** The node setting Retry On Fail. */
	retryOnFail?: boolean;
	/**
	 * Run as the AI-tool variant (`imagePackTool`), as AI Agent 3.x runs a tool call: an ordinary
	 * ExecuteContext whose input item carries the model's arguments and `toolCallId`.
	 */
	asTool?: boolean;
	/** The execution's data; pass the same object to several calls to make them one execution. */
	runExecutionData?: IRunExecutionData;
	/** The node version a saved workflow holds (default: the newest). */
	typeVersion?: number;
}

/**
 * Empty run data of one execution, as n8n starts it (context data included, and n8n 2.x's resume
 * token, which a retry of the execution copies and a new execution does not have).
 */
export function newRunExecutionData(): IRunExecutionData {
	return createRunExecutionData();
}

/** A saved, inactive workflow holding just this node. */
export function inactiveWorkflow(nodeType: INodeType, node: INode): Workflow {
	return new Workflow({
		id: 'test-workflow',
		nodes: [node],
		connections: {},
		active: false,
		nodeTypes: new TestNodeTypes({ [nodeType.description.name]: nodeType }),
	});
}

/** Runs `execute()` once, as n8n runs a node of a workflow, and returns its output. */
export async function runNode(options: RunNodeOptions): Promise<INodeExecutionData[][]> {
	const node = makeNode(options.nodeType, options.parameters, options);
	const workflow = inactiveWorkflow(options.nodeType, node);
	const items = options.items ?? [{ json: {} }];
	const runExecutionData = options.runExecutionData ?? newRunExecutionData();
	const context = new ExecuteContext(
		workflow,
		node,
		additionalData(options.credentials),
		options.mode ?? 'manual',
		runExecutionData,
		0,
		items,
		{ main: [items] },
		{ node, data: { main: [items] }, source: null },
		[],
		options.abortSignal,
	);
	const result = await options.nodeType.execute!.call(context);
	return result as INodeExecutionData[][];
}

/** What polls wrote to n8n's log (`this.logger`), oldest first; tests clear it as they need. */
export const pollLog: Array<{ level: 'debug' | 'info' | 'warn' | 'error'; message: string }> = [];

/** n8n's logger as a poll sees it, writing to `pollLog` instead of n8n's log output. */
const recordingLogger = Object.fromEntries(
	(['debug', 'info', 'warn', 'error'] as const).map((level) => [
		level,
		(message: string) => pollLog.push({ level, message }),
	]),
);

export interface PollOptions {
	nodeType: INodeType;
	parameters: INodeParameters;
	credentials?: HarnessCredentials;
	/** `trigger` for a timed poll of an active workflow, `manual` for "Fetch Test Event". */
	mode?: 'trigger' | 'manual';
	activation?: WorkflowActivateMode;
	/** The workflow's static data, as n8n keeps it between polls (use the same object to carry it on). */
	staticData?: IDataObject;
	nodeName?: string;
	/** The workflow's id (default `test-workflow`). */
	workflowId?: string;
	getPollBudgetMs?: () => number;
	/**
	 * What `getWorkflowStaticData('node')` returns. Default: the workflow's own bucket (n8n's legacy
	 * poll path); n8n 2.41's durable-cursor path hands each poll a staged snapshot instead.
	 */
	resolveNodeStaticData?: () => IDataObject;
}

/**
 * A workflow holding a polling node, kept alive between polls the way an active workflow is.
 * `poll()` runs one poll in a real `PollContext`; `staticData` is the workflow's static data.
 */
export class PollingWorkflow {
	readonly workflow: Workflow;

	readonly node: INode;

	constructor(private options: PollOptions) {
		this.node = makeNode(options.nodeType, options.parameters, { name: options.nodeName });
		this.workflow = new Workflow({
			id: options.workflowId ?? 'test-workflow',
			nodes: [this.node],
			connections: {},
			active: true,
			nodeTypes: new TestNodeTypes({ [options.nodeType.description.name]: options.nodeType }),
			staticData: options.staticData ?? {},
		});
	}

	/**
	 * The user edits the credential the node uses: n8n reads it anew at every poll (the workflow is
	 * not re-activated, its static data stays).
	 */
	useCredentials(credentials: HarnessCredentials): void {
		this.options.credentials = credentials;
	}

	/** The static data as n8n would persist it (a JSON round trip, like the database). */
	serializedStaticData(): IDataObject {
		return JSON.parse(JSON.stringify(this.workflow.staticData)) as IDataObject;
	}

	async poll(
		mode: 'trigger' | 'manual' = this.options.mode ?? 'trigger',
	): Promise<INodeExecutionData[][] | null> {
		const context = new PollContext(
			this.workflow,
			this.node,
			additionalData(this.options.credentials),
			mode,
			this.options.activation ?? 'init',
			undefined,
			undefined,
			undefined,
			undefined,
			this.options.resolveNodeStaticData,
			this.options.getPollBudgetMs,
		);
		Object.defineProperty(context, 'logger', { value: recordingLogger });
		return await this.options.nodeType.poll!.call(context);
	}
}

/**
 * Runs a `listSearch` method as the editor's "From list" does (n8n's LoadOptionsContext, with the
 * node's current parameters), e.g. `runListSearch({ nodeType, method: 'searchPublications', … })`.
 */
export async function runListSearch(options: {
	nodeType: INodeType;
	method: string;
	parameters: INodeParameters;
	credentials: HarnessCredentials;
	filter?: string;
	paginationToken?: string;
}): Promise<INodeListSearchResult> {
	const node = makeNode(options.nodeType, options.parameters, {});
	const workflow = inactiveWorkflow(options.nodeType, node);
	const data = {
		...additionalData(options.credentials),
		currentNodeParameters: options.parameters,
	};
	const context = new LoadOptionsContext(workflow, node, data, 'parameters.publicationId');
	const method = options.nodeType.methods?.listSearch?.[options.method];
	if (!method) throw new Error(`No listSearch method ${options.method}`);
	return await method.call(context, options.filter, options.paginationToken);
}

let binaryStoragePath: string | undefined;

/**
 * Switches n8n's binary data to filesystem mode (as a default n8n 2.x install runs), storing under
 * `storagePath`. Without it binaries stay in memory as base64, as in n8n's tests.
 */
export async function useFilesystemBinaryData(storagePath: string): Promise<void> {
	if (binaryStoragePath === storagePath) return;
	const config = Container.get(BinaryDataConfig);
	config.mode = 'filesystem';
	config.localStoragePath = storagePath;
	const service = Container.get(BinaryDataService);
	await service.init();
	binaryStoragePath = storagePath;
}

/**
 * Runs the credential's declarative test as n8n's CredentialsTester does (packages/cli,
 * credentials-tester.service.ts): the test request goes through a RoutingNode of a throw-away node,
 * failures map through the `responseCode` rules, network failures report their code.
 */
export async function runCredentialTest(
	credentials: HarnessCredentials,
): Promise<INodeCredentialTestResult> {
	const credentialType = new ImagePackApi();
	const testRequest = credentialType.test;
	const nodeType: INodeType = {
		description: {
			displayName: 'Temp',
			name: 'temp',
			group: ['transform'],
			version: 1,
			description: '',
			defaults: {},
			inputs: [],
			outputs: [],
			credentials: [{ name: credentialType.name, required: true }],
			properties: [
				{
					displayName: 'Temp',
					name: 'temp',
					type: 'string',
					routing: { request: testRequest.request },
					default: '',
				},
			],
		},
	};
	const node: INode = {
		id: 'temp',
		name: 'Temp-Node',
		type: `${PACKAGE}.temp`,
		typeVersion: 1,
		position: [0, 0],
		parameters: {},
		credentials: { [credentialType.name]: { id: 'cred-1', name: 'test' } },
	};
	const workflow = new Workflow({
		nodes: [node],
		connections: {},
		active: false,
		nodeTypes: new TestNodeTypes({ temp: nodeType }),
	});
	const items = [{ json: {} }];
	const context = new ExecuteContext(
		workflow,
		node,
		additionalData(credentials),
		'internal',
		{ resultData: { runData: {} } } as IRunExecutionData,
		0,
		[],
		{ main: [items] },
		{ node, data: {}, source: null },
		[],
	);
	const decrypted = {
		id: 'cred-1',
		name: 'test',
		type: credentialType.name,
		data: { ...credentials },
	};
	try {
		await new RoutingNode(context, nodeType, decrypted).runNode();
	} catch (error) {
		const cause = (
			error as { cause?: { response?: { status: number; statusText?: string }; code?: string } }
		).cause;
		if (cause?.response) {
			const rule = testRequest.rules?.find(
				(candidate) =>
					candidate.type === 'responseCode' &&
					candidate.properties.value === cause.response!.status,
			);
			if (rule)
				return { status: 'Error', message: (rule.properties as { message: string }).message };
			return {
				status: 'Error',
				message: cause.response.statusText || `Received HTTP status code: ${cause.response.status}`,
			};
		}
		if (cause?.code) return { status: 'Error', message: cause.code };
		return { status: 'Error', message: (error as Error).message };
	}
	return { status: 'OK', message: 'Connection successful!' };
}
