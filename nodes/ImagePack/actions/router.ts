import { type IExecuteFunctions, type INodeExecutionData, NodeOperationError } from 'n8n-workflow';

import * as file from './file/File.resource';
import * as image from './image/Image.resource';
import type { ImagePackType, NodeMap } from './node.type';
import * as publication from './publication/Publication.resource';
import { rule } from '../shared/codes';
import { errorFacts, imagePackError } from '../shared/errors';
import { asNodeError, errorItem } from './items';
import { runsAsTool, runsUnderMcp, toolErrorItem } from './tool';

type Operation = (
	this: IExecuteFunctions,
	items: INodeExecutionData[],
) => Promise<INodeExecutionData[]>;

/** Every operation of the map in its resource's module: one missing does not compile. */
const resources: { [R in keyof NodeMap]: Record<NodeMap[R], { execute: Operation }> } = {
	image,
	publication,
	file,
};

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const { resource, operation } = {
		resource: this.getNodeParameter('resource', 0),
		operation: this.getNodeParameter('operation', 0),
	} as ImagePackType;
	// A saved workflow may hold anything: an unknown pair finds nothing.
	const operations = resources[resource] as Record<string, { execute?: Operation } | undefined>;
	const run = operations?.[operation]?.execute;
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
		// message. The model gets the whole story as the tool's result instead (see tool.ts).
		if (runsAsTool(this)) {
			const failed = items.map((_item, itemIndex) => toolErrorItem(error, itemIndex, operation));
			// Only a throw reaches an MCP client flagged as an error: the whole text in the message.
			if (runsUnderMcp(this)) {
				throw new NodeOperationError(this.getNode(), String(failed[0].json.error));
			}
			return [failed];
		}
		// Under Continue On Fail only a failure before the item loop (the credential, the connection)
		// gets here. Thrown, n8n would pass the input items down the success output: every item
		// failed, so every item becomes an error item. A stopped execution runs no branch.
		if (this.continueOnFail() && !rule(errorFacts(error).code).stopped) {
			return [items.map((_item, itemIndex) => errorItem(error, itemIndex))];
		}
		throw asNodeError(this, error);
	}
}
