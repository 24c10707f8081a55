! `use mpi` (explicit interfaces): sendrecv, probe, gatherv/scatter,
! in-place allgather, alltoall, a subarray type, names and info strings,
! a keyval with Fortran copy and delete callbacks across MPI_COMM_DUP, a
! user error handler (with added error classes and codes), MPI_COMPLEX
! and DOUBLE COMPLEX sums, a window's flavor and model attributes.
! Prints PASS usempi.
! The callbacks, in a module (an internal procedure passed as a callback
! would need a trampoline on an executable stack).
module usempi_callbacks
  use mpi
  implicit none
  integer :: deletes = 0, last_code = 0
contains

  subroutine copy_fn(oldcomm, keyval, extra_state, val_in, val_out, flag, ierr)
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, val_in, val_out
    logical :: flag
    val_out = val_in + 1 + extra_state
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine copy_fn

  subroutine delete_fn(comm, keyval, val, extra_state, ierr)
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra_state
    if (val == 49 .and. extra_state == 7) deletes = deletes + 1
    ierr = MPI_SUCCESS
  end subroutine delete_fn

  subroutine on_error(comm, code)
    integer :: comm, code
    if (code /= MPI_SUCCESS) deletes = deletes + 100
  end subroutine on_error

  subroutine record_code(comm, code)
    integer :: comm, code
    last_code = code
  end subroutine record_code
end module usempi_callbacks

program usempi
  use mpi
  use usempi_callbacks
  implicit none
  integer :: ierr, rank, np, i, errs, total, left, right, cnt, sub, dup, key, eh
  integer :: status(MPI_STATUS_SIZE), info, nlen
  integer :: win, winbuf(4), uclass, ucode
  integer(kind=MPI_ADDRESS_KIND) :: wval
  logical :: found
  integer, allocatable :: counts(:), displs(:), all(:), mine(:), a2a(:), back(:)
  integer :: grid(4, 3), piece(2, 2), sizes(2), subsizes(2), starts(2)
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  complex :: z, zs
  double complex :: dz, dzs
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_INFO_VAL) :: value
  logical :: flag

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  left = mod(rank + np - 1, np)
  right = mod(rank + 1, np)

  ! Probe a message of unknown length, then receive it.
  allocate (mine(rank + 1))
  mine = rank
  call MPI_Send(mine, rank + 1, MPI_INTEGER, right, 3, MPI_COMM_WORLD, ierr)
  call MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  if (cnt /= left + 1 .or. status(MPI_TAG) /= 3) errs = errs + 1
  allocate (back(cnt))
  call MPI_Recv(back, cnt, MPI_INTEGER, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (any(back /= left)) errs = errs + 1

  ! Gatherv of rank+1 items from each rank, scattered back.
  allocate (counts(np), displs(np), all(np * (np + 1) / 2))
  do i = 1, np
    counts(i) = i
    displs(i) = (i - 1) * i / 2
  end do
  call MPI_Gatherv(mine, rank + 1, MPI_INTEGER, all, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, np
      if (any(all(displs(i) + 1:displs(i) + i) /= i - 1)) errs = errs + 1
    end do
  end if
  call MPI_Scatter(all, 1, MPI_INTEGER, cnt, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)

  ! In-place allgather and an all-to-all.
  deallocate (all)
  allocate (all(np), a2a(np))
  all(rank + 1) = rank * 3
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (all(i) /= (i - 1) * 3) errs = errs + 1
    all(i) = rank * 100 + i - 1
  end do
  call MPI_Alltoall(all, 1, MPI_INTEGER, a2a, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, np
    if (a2a(i) /= (i - 1) * 100 + rank) errs = errs + 1
  end do

  ! A 2x2 subarray of a 4x3 grid (Fortran order).
  do i = 1, 12
    grid(mod(i - 1, 4) + 1, (i - 1) / 4 + 1) = i + rank * 100
  end do
  sizes = [4, 3]
  subsizes = [2, 2]
  starts = [1, 1]
  call MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INTEGER, sub, ierr)
  call MPI_Type_commit(sub, ierr)
  call MPI_Sendrecv(grid, 1, sub, right, 5, piece, 4, MPI_INTEGER, left, 5, MPI_COMM_WORLD, status, ierr)
  if (piece(1, 1) /= left * 100 + 6 .or. piece(2, 2) /= left * 100 + 11) errs = errs + 1
  call MPI_Type_free(sub, ierr)

  ! Names and info strings.
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'the world   ', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, nlen, ierr)
  if (name /= 'the world' .or. nlen /= 9) errs = errs + 1
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'colour', 'blue', ierr)
  call MPI_Info_get(info, 'colour', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (.not. flag .or. value /= 'blue') errs = errs + 1
  call MPI_Info_get(info, 'shape', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (flag) errs = errs + 1
  call MPI_Info_free(info, ierr)

  ! Attributes with Fortran callbacks: copied on dup (value + 1), deleted on free.
  extra = 7
  call MPI_Comm_create_keyval(copy_fn, delete_fn, key, extra, ierr)
  val = 41
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, val, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, key, val, flag, ierr)
  if (.not. flag .or. val /= 42 + 7) errs = errs + 1
  call MPI_Comm_free(dup, ierr)
  if (deletes /= 1) errs = errs + 1
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call MPI_Comm_free_keyval(key, ierr)

  ! A user error handler sees the error; then errors return.
  call MPI_Comm_create_errhandler(on_error, eh, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh, ierr)
  call MPI_Send(mine, 1, MPI_INTEGER, np + 5, 0, MPI_COMM_WORLD, ierr)
  if (ierr == MPI_SUCCESS .or. deletes /= 101) errs = errs + 1
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Errhandler_free(eh, ierr)

  ! A class and a code the program adds reach its handler as they are,
  ! through MPI_COMM_CALL_ERRHANDLER, on a handler already freed.
  call MPI_Add_error_class(uclass, ierr)
  call MPI_Add_error_code(uclass, ucode, ierr)
  call MPI_Comm_create_errhandler(record_code, eh, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_set_errhandler(dup, eh, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Comm_call_errhandler(dup, ucode, ierr)
  if (last_code /= ucode .or. ierr /= MPI_SUCCESS) errs = errs + 1
  call MPI_Comm_call_errhandler(dup, uclass, ierr)
  if (last_code /= uclass) errs = errs + 1
  call MPI_Comm_call_errhandler(dup, MPI_ERR_TAG, ierr)
  if (last_code /= MPI_ERR_TAG) errs = errs + 1
  call MPI_Comm_free(dup, ierr)

  ! Complex sums.
  z = cmplx(rank, 1.0)
  call MPI_Allreduce(z, zs, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (abs(zs - cmplx(np * (np - 1) / 2, np)) > 1e-5) errs = errs + 1
  dz = dcmplx(1.0d0, rank)
  call MPI_Allreduce(dz, dzs, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (abs(dzs - dcmplx(dble(np), dble(np * (np - 1) / 2))) > 1d-9) errs = errs + 1

  ! MPI_SIZEOF on scalars and arrays of several kinds.
  call MPI_Sizeof(dz, cnt, ierr)
  if (cnt /= 16 .or. ierr /= MPI_SUCCESS) errs = errs + 1
  call MPI_Sizeof(back, cnt, ierr)
  if (cnt /= 4) errs = errs + 1
  call MPI_Sizeof(1_8, cnt, ierr)
  if (cnt /= 8) errs = errs + 1
  ! LOGICAL and CHARACTER, as MPICH's MPI_SIZEOF has them.
  call MPI_Sizeof([.true., .false.], cnt, ierr)
  if (cnt /= 4) errs = errs + 1
  call MPI_Sizeof(.true._1, cnt, ierr)
  if (cnt /= 1) errs = errs + 1
  call MPI_Sizeof(['ab', 'cd'], cnt, ierr)
  if (cnt /= 1 .or. ierr /= MPI_SUCCESS) errs = errs + 1

  ! A window's flavor and memory model, against the enum constants.
  call MPI_Win_create(winbuf, 16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, wval, found, ierr)
  if (.not. found .or. wval /= MPI_WIN_FLAVOR_CREATE .or. MPI_WIN_FLAVOR_CREATE /= 1) errs = errs + 1
  call MPI_Win_get_attr(win, MPI_WIN_MODEL, wval, found, ierr)
  if (.not. found .or. (wval /= MPI_WIN_UNIFIED .and. wval /= MPI_WIN_SEPARATE)) errs = errs + 1
  if (MPI_WIN_UNIFIED /= 2 .or. MPI_WIN_FLAVOR_SHARED /= 4) errs = errs + 1
  call MPI_Win_free(win, ierr)

  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. total == 0) print '(a)', 'PASS usempi'
  if (rank == 0 .and. total /= 0) print *, 'FAIL', total
  call MPI_Finalize(ierr)

end program usempi
