import type { INodeProperties } from 'n8n-workflow';

import * as generate from './generate.operation';
import { operationSelector } from '../operations';

export { generate };

export const description: INodeProperties[] = [operationSelector('image'), ...generate.description];
