%% dragnet: language=erlang
fun({Doc}) ->
    {Step0} = proplists:get_value(<<"step_0">>, Doc, {[]}),
    case proplists:get_value(<<"declarationType">>, Step0) of
        <<"1">> -> Emit(proplists:get_value(<<"_id">>, Doc), null);
        _ -> ok
    end
end.
