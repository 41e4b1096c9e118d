import { ServiceError } from '../../domain/errors.ts';
import { ownerMemberId } from '../settings.ts';
import { AUDIT_RELATIONS, type ResourceSpec } from './resource-spec.ts';

export const members: ResourceSpec = {
  name: 'members',
  table: 'rh_members',
  label: 'member',
  attrs: {
    name: { type: 'text', schema: { type: 'string', minLength: 1, maxLength: 255 }, create: 'required' },
    email: {
      type: 'text',
      schema: { type: 'string', pattern: '^[^@\\s]+@[^@\\s]+$', maxLength: 320 },
      nullable: true,
      default: () => null,
    },
  },
  relations: AUDIT_RELATIONS,
  hooks: {
    async beforeDelete(tx, item) {
      if (item.id === (await ownerMemberId(tx))) throw new ServiceError('in_use', `member ${item.id} is the owner and cannot be deleted`);
      const key = await tx.selectFrom('rh_api_keys').select('id').where('memberId', '=', item.id).executeTakeFirst();
      if (key) throw new ServiceError('in_use', `member ${item.id} still owns API keys; delete them first`);
    },
  },
};
