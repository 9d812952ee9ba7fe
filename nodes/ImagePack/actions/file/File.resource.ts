import type { INodeProperties } from 'n8n-workflow';

import * as download from './download.operation';
import { operationSelector } from '../operations';

export { download };

export const description: INodeProperties[] = [operationSelector('file'), ...download.description];
