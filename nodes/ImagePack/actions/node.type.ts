/** The node's resource/operation pairs as a type, derived from the one map (operations.ts). */
import type { AllEntities } from 'n8n-workflow';

import type { OPERATIONS, OperationName } from './operations';

type Map = typeof OPERATIONS;

/** Each resource with the union of its operations: `{ image: 'generate'; publication: 'get' | 'getMany'; … }`. */
export type NodeMap = {
	[R in Map[OperationName]['resource']]: {
		[O in OperationName]: Map[O]['resource'] extends R ? O : never;
	}[OperationName];
};

export type ImagePackType = AllEntities<NodeMap>;
