%% dragnet: language=erlang
fun({Doc}) ->
    Emit(proplists:get_value(<<"_id">>, Doc), proplists:get_value(<<"type">>, Doc))
end.
