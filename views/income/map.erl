%% dragnet: language=erlang
fun({Doc}) ->
    Obj = fun(K, P) ->
              case proplists:get_value(K, P) of
                  {L} when is_list(L) -> L;
                  _ -> []
              end
          end,
    S0 = Obj(<<"step_0">>, Doc),
    case proplists:get_value(<<"declarationType">>, S0) =:= <<"1">>
         andalso not proplists:is_defined(<<"changesYear">>, S0) of
        false ->
            ok;
        true ->
            S1 = Obj(<<"step_1">>, Doc),
            Add = fun({_Key, {Item}}, {DS0, DT0, FS0, FT0}) when is_list(Item) ->
                          Size = case proplists:get_value(<<"sizeIncome">>, Item) of
                                     N when is_number(N) -> N;
                                     _ -> 0
                                 end,
                          Salary = proplists:get_value(<<"objectType">>, Item) =:= <<"salarymain">>,
                          case proplists:get_value(<<"person">>, Item) of
                              <<"1">> when Salary -> {DS0 + Size, DT0 + Size, FS0, FT0};
                              <<"1">> -> {DS0, DT0 + Size, FS0, FT0};
                              _ when Salary -> {DS0, DT0, FS0 + Size, FT0 + Size};
                              _ -> {DS0, DT0, FS0, FT0 + Size}
                          end;
                     (_NotAnObject, Acc) ->
                          Acc
                  end,
            {DS, DT, FS, FT} = lists:foldl(Add, {0, 0, 0, 0}, Obj(<<"step_11">>, Doc)),
            Str = fun(K) -> proplists:get_value(K, S1, null) end,
            FIO = iolist_to_binary(lists:join(<<" ">>, [Str(<<"lastname">>), Str(<<"firstname">>),
                                                       Str(<<"middlename">>)])),
            Emit(proplists:get_value(<<"_id">>, Doc),
                 {[{<<"FIO">>, FIO},
                   {<<"workPost">>, Str(<<"workPost">>)},
                   {<<"workPlace">>, Str(<<"workPlace">>)},
                   {<<"decl_year">>, proplists:get_value(<<"declarationYear1">>, S0, null)},
                   {<<"declarant_salary">>, DS},
                   {<<"declarant_total">>, DT},
                   {<<"family_salary">>, FS},
                   {<<"family_total">>, FT}]})
    end
end.
