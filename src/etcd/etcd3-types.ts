// etcd3's request and response types, as far as the recipe uses them, copied structurally (etcd3 1.1.2,
// lib/rpc.d.ts; its enums as their names, which etcd3 accepts too). fencelock's declarations (dist/*.d.ts)
// mention these, and a published declaration must not import an optional package: a project without etcd3
// would not build (TS2307). etcd3's own types are used only inside the store, where nothing is emitted.

export interface IResponseHeader {
  cluster_id: string;
  member_id: string;
  revision: string;
  raft_term: string;
}

export interface IKeyValue {
  key: Buffer;
  create_revision: string;
  mod_revision: string;
  version: string;
  value: Buffer;
  lease: string;
}

export interface IRangeRequest {
  key?: Buffer;
  range_end?: Buffer;
  limit?: string | number;
  revision?: string | number;
  sort_order?: 'None' | 'Ascend' | 'Descend';
  sort_target?: 'Key' | 'Version' | 'Create' | 'Mod' | 'Value';
  serializable?: boolean;
  keys_only?: boolean;
  count_only?: boolean;
  min_mod_revision?: string | number;
  max_mod_revision?: string | number;
  min_create_revision?: string | number;
  max_create_revision?: string | number;
}

export interface IRangeResponse {
  header: IResponseHeader;
  kvs: IKeyValue[];
  more: boolean;
  count: string;
}

export interface IPutRequest {
  key?: Buffer;
  value?: Buffer;
  lease?: string | number;
  prev_kv?: boolean;
  ignore_value?: boolean;
  ignore_lease?: boolean;
}

export interface IDeleteRangeRequest {
  key?: Buffer;
  range_end?: Buffer;
  prev_kv?: boolean;
}

export interface ICompare {
  result?: 'Equal' | 'Greater' | 'Less' | 'NotEqual';
  target?: 'Version' | 'Create' | 'Mod' | 'Value' | 'Lease';
  key?: Buffer;
  version?: string | number;
  create_revision?: string | number;
  mod_revision?: string | number;
  value?: Buffer;
  lease?: string | number;
  range_end?: Buffer;
}

export interface IRequestOp {
  request_range?: IRangeRequest;
  request_put?: IPutRequest;
  request_delete_range?: IDeleteRangeRequest;
  request_txn?: ITxnRequest;
}

export interface ITxnRequest {
  compare?: ICompare[];
  success?: IRequestOp[];
  failure?: IRequestOp[];
}

export interface IResponseOp {
  response_range: IRangeResponse;
  response_put: { header: IResponseHeader; prev_kv: IKeyValue };
  response_delete_range: { header: IResponseHeader; deleted: string; prev_kvs: IKeyValue[] };
  response_txn: ITxnResponse;
}

export interface ITxnResponse {
  header: IResponseHeader;
  succeeded: boolean;
  responses: IResponseOp[];
}
