import { type IExecuteFunctions, type INodeExecutionData, NodeOperationError } from 'n8n-workflow';

import * as download from './file/download.operation';
import * as generate from './image/generate.operation';
import * as get from './publication/get.operation';
import * as getMany from './publication/getMany.operation';
import { imagePackError } from '../shared/errors';
import { asNodeError } from '../shared/execution';
import { runsAsTool, runsUnderMcp, toolErrorItem } from '../shared/tool';

type Operation = (
	this: IExecuteFunctions,
	items: INodeExecutionData[],
) => Promise<INodeExecutionData[]>;

const operations: Record<string, Record<string, Operation>> = {
	image: { generate: generate.execute },
	publication: { get: get.execute, getMany: getMany.execute },
	file: { download: download.execute },
};

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const resource = this.getNodeParameter('resource', 0) as string;
	const operation = this.getNodeParameter('operation', 0) as string;
	const run = operations[resource]?.[operation];
	if (!run) {
		throw imagePackError(
			this.getNode(),
			{ code: 'invalid_parameter', parameter: 'operation', charge: 'not_sent' },
			{ message: `The operation "${operation}" of "${resource}" is not supported` },
		);
	}
	const items = this.getInputData();
	try {
		return [await run.call(this, items)];
	} catch (error) {
		// An agent's tool must not throw: AI Agent 2.x hands the model an empty string, 3.x the bare
		// message. The model gets the whole story as the tool's result instead (see shared/tool.ts).
		if (!runsAsTool(this)) throw asNodeError(this, error);
		const failed = items.map((_item, itemIndex) => toolErrorItem(error, itemIndex, operation));
		// mcp: only a throw reaches an MCP client flagged as an error; the whole text in the message.
		if (runsUnderMcp(this))
			throw new NodeOperationError(this.getNode(), String(failed[0].json.error));
		return [failed];
	}
}
