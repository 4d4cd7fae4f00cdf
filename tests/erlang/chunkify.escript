#!/usr/bin/env escript
%% Reads a list of Erlang terms from FILE (file:consult: one `Term.` per line) and prints
%% `external_size` of each, then the chunk lengths of couch_btree:chunkify/1 over the list.
%%
%% chunkify/1,5 below are copied from apache/couchdb 3.5.0 src/couch/src/couch_btree.erl (lines 378-406,
%% Apache License 2.0), with get_chunk_size() fixed at its default 1279 and ?term_size as in couch_db.hrl:37.
-define(term_size(T), erlang:external_size(T, [{minor_version, 1}])).

main([File]) ->
    {ok, Terms} = file:consult(File),
    io:format("~w~n", [[?term_size(T) || T <- Terms]]),
    io:format("~w~n", [[length(C) || C <- chunkify(Terms)]]).

get_chunk_size() -> 1279.

chunkify(InList) ->
    BaseChunkSize = get_chunk_size(),
    case ?term_size(InList) of
        Size when Size > BaseChunkSize ->
            NumberOfChunksLikely = ((Size div BaseChunkSize) + 1),
            ChunkThreshold = Size div NumberOfChunksLikely,
            chunkify(InList, ChunkThreshold, [], 0, []);
        _Else ->
            [InList]
    end.

chunkify([], _ChunkThreshold, [], 0, OutputChunks) ->
    lists:reverse(OutputChunks);
chunkify([], _ChunkThreshold, [Item], _OutListSize, [PrevChunk | RestChunks]) ->
    NewPrevChunk = PrevChunk ++ [Item],
    lists:reverse(RestChunks, [NewPrevChunk]);
chunkify([], _ChunkThreshold, OutList, _OutListSize, OutputChunks) ->
    lists:reverse([lists:reverse(OutList) | OutputChunks]);
chunkify([InElement | RestInList], ChunkThreshold, OutList, OutListSize, OutputChunks) ->
    case ?term_size(InElement) of
        Size when (Size + OutListSize) > ChunkThreshold andalso OutList /= [] ->
            chunkify(RestInList, ChunkThreshold, [], 0, [
                lists:reverse([InElement | OutList]) | OutputChunks
            ]);
        Size ->
            chunkify(
                RestInList, ChunkThreshold, [InElement | OutList], OutListSize + Size, OutputChunks
            )
    end.
